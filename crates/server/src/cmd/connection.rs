//! Connection commands: `PING`, `ECHO`, `HELLO`, `AUTH`, `CLIENT …`, `QUIT`,
//! `RESET`.

use std::sync::atomic::Ordering;

use super::{Command, Ctx, arity_error, syntax_error};
use crate::num::parse_i64;
use crate::resp::Reply;

/// `PING [message]`.
pub(super) struct Ping<'a> {
    message: Option<&'a [u8]>,
}

impl<'a> Command<'a> for Ping<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        match args.len() {
            1 => Ok(Ping { message: None }),
            2 => Ok(Ping {
                message: Some(&args[1]),
            }),
            _ => Err(arity_error("ping")),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        if ctx.client.proto == 2 && ctx.client.subs.count() > 0 {
            // Subscribed mode (RESP2): Redis answers in the shape of a message.
            return Reply::Array(vec![
                Reply::bulk("pong"),
                Reply::bulk(self.message.unwrap_or_default()),
            ]);
        }
        match self.message {
            None => Reply::Simple("PONG"),
            Some(m) => Reply::bulk(m),
        }
    }
}

/// `ECHO message`.
pub(super) struct Echo<'a> {
    message: &'a [u8],
}

impl<'a> Command<'a> for Echo<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        Ok(Echo { message: &args[1] })
    }

    fn apply(self, _ctx: &mut Ctx<'_>) -> Reply {
        Reply::bulk(self.message)
    }
}

/// Checks a password (`user` must be `default`), updating the client's state.
fn check_password(ctx: &mut Ctx<'_>, user: Option<&[u8]>, pass: &[u8]) -> Result<(), Reply> {
    let wrong = || Reply::err("WRONGPASS invalid username-password pair or user is disabled.");
    if user.is_some_and(|u| u != b"default") {
        return Err(wrong());
    }
    match &ctx.shared.live.requirepass() {
        Some(p) if p.as_bytes() == pass => {
            ctx.client.authenticated = true;
            Ok(())
        }
        Some(_) => Err(wrong()),
        None if user.is_some() => Ok(()),
        None => Err(Reply::err(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        )),
    }
}

/// `AUTH [user] password`.
pub(super) struct Auth<'a> {
    user: Option<&'a [u8]>,
    password: &'a [u8],
}

impl<'a> Command<'a> for Auth<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        match args.len() {
            2 => Ok(Auth {
                user: None,
                password: &args[1],
            }),
            3 => Ok(Auth {
                user: Some(&args[1]),
                password: &args[2],
            }),
            _ => Err(syntax_error()),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        check_password(ctx, self.user, self.password).map_or_else(|e| e, |()| Reply::OK)
    }
}

/// `HELLO [protover [AUTH user password] [SETNAME name]]`.
pub(super) struct Hello<'a> {
    /// The protocol asked for (none: keep the current one).
    proto: Option<u8>,
    /// Every `AUTH` option, in order (each is checked, as given).
    auth: Vec<(&'a [u8], &'a [u8])>,
    /// The last `SETNAME` option.
    name: Option<&'a [u8]>,
}

impl<'a> Command<'a> for Hello<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let mut hello = Hello {
            proto: None,
            auth: Vec::new(),
            name: None,
        };
        if let Some(v) = args.get(1) {
            match parse_i64(v) {
                Some(p @ 2..=3) => hello.proto = Some(p as u8),
                Some(_) => return Err(Reply::err("NOPROTO unsupported protocol version")),
                None => {
                    return Err(Reply::err(
                        "ERR Protocol version is not an integer or out of range",
                    ));
                }
            }
        }
        let mut i = 2;
        while i < args.len() {
            let opt = args[i].to_ascii_uppercase();
            if opt == b"AUTH" && i + 2 < args.len() {
                hello.auth.push((&args[i + 1], &args[i + 2]));
                i += 3;
            } else if opt == b"SETNAME" && i + 1 < args.len() {
                if !valid_name(&args[i + 1]) {
                    return Err(bad_name());
                }
                hello.name = Some(&args[i + 1]);
                i += 2;
            } else {
                return Err(Reply::err(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(&args[i])
                )));
            }
        }
        Ok(hello)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        for (user, pass) in self.auth {
            if let Err(e) = check_password(ctx, Some(user), pass) {
                return e;
            }
        }
        if !ctx.client.authenticated {
            return Reply::err(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
            );
        }
        if let Some(n) = self.name {
            ctx.client.info.set_name(n.to_vec());
        }
        let proto = self.proto.unwrap_or(ctx.client.proto);
        ctx.client.proto = proto;
        ctx.client.subs.set_proto(proto);
        Reply::Map(vec![
            (Reply::bulk("server"), Reply::bulk("redis")),
            (Reply::bulk("version"), Reply::bulk(crate::REDIS_VERSION)),
            (Reply::bulk("proto"), Reply::Int(i64::from(proto))),
            (Reply::bulk("id"), Reply::Int(ctx.client.info.id as i64)),
            (Reply::bulk("mode"), Reply::bulk("standalone")),
            (Reply::bulk("role"), Reply::bulk("master")),
            (Reply::bulk("modules"), Reply::Array(vec![])),
        ])
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

fn bad_name() -> Reply {
    Reply::err("ERR Client names cannot contain spaces, newlines or special characters.")
}

/// `CLIENT subcommand …`: parsed in two steps, as Redis dispatches subcommands. The
/// subcommand's name and arity first (an error here is not recorded as the client's last
/// command), then, once the subcommand is recorded, its own arguments ([`ClientOp`]).
pub(super) struct Client<'a> {
    /// The subcommand's name as `CLIENT LIST` shows it (`client|setname` …).
    name: &'static str,
    args: &'a [Vec<u8>],
}

impl<'a> Command<'a> for Client<'a> {
    fn parse(args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        let n = args.len();
        let (name, arity_ok) = match sub.as_str() {
            "setname" => ("client|setname", n == 3),
            "getname" => ("client|getname", n == 2),
            "id" => ("client|id", n == 2),
            "info" => ("client|info", n == 2),
            "list" => ("client|list", n == 2 || n >= 4),
            _ => {
                return Err(Reply::err(format!(
                    "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                    String::from_utf8_lossy(&args[1])
                )));
            }
        };
        if !arity_ok {
            return Err(arity_error(&format!("client|{sub}")));
        }
        Ok(Client { name, args })
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.client
            .info
            .set_last_command(super::subcommand_number(self.name));
        match ClientOp::parse(self.name, self.args) {
            Ok(op) => op.apply(ctx),
            Err(e) => e,
        }
    }
}

/// A `CLIENT` subcommand with its arguments checked.
enum ClientOp<'a> {
    SetName(&'a [u8]),
    GetName,
    Id,
    Info,
    List,
}

impl<'a> ClientOp<'a> {
    /// Parses the arguments of subcommand `name` (its arity is checked).
    fn parse(name: &'static str, args: &'a [Vec<u8>]) -> Result<Self, Reply> {
        match name {
            "client|setname" if !valid_name(&args[2]) => Err(bad_name()),
            "client|setname" => Ok(ClientOp::SetName(&args[2])),
            "client|getname" => Ok(ClientOp::GetName),
            "client|id" => Ok(ClientOp::Id),
            "client|info" => Ok(ClientOp::Info),
            _ if args.len() > 2 => Err(syntax_error()),
            _ => Ok(ClientOp::List),
        }
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        match self {
            ClientOp::SetName(name) => {
                ctx.client.info.set_name(name.to_vec());
                Reply::OK
            }
            ClientOp::GetName => ctx.client.info.name().map_or(Reply::Nil, Reply::Bulk),
            ClientOp::Id => Reply::Int(ctx.client.info.id as i64),
            ClientOp::Info => {
                let mut line = ctx.client.info.describe(
                    ctx.now(),
                    ctx.client.proto,
                    super::command_name(ctx.client.info.last_command()),
                );
                line.push('\n');
                Reply::Verbatim(line.into_bytes())
            }
            ClientOp::List => {
                let mut text = String::new();
                for c in ctx.shared.clients.snapshot() {
                    let proto = c.proto.load(Ordering::Relaxed);
                    let cmd = super::command_name(c.last_command());
                    text.push_str(&c.describe(ctx.now(), proto, cmd));
                    text.push('\n');
                }
                Reply::Verbatim(text.into_bytes())
            }
        }
    }
}

/// `QUIT`: closes the connection after the reply.
pub(super) struct Quit;

impl Command<'_> for Quit {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Quit)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.client.close_after_reply = true;
        Reply::OK
    }
}

/// `RESET`: the connection's state back to a fresh one's.
pub(super) struct Reset;

impl Command<'_> for Reset {
    fn parse(_args: &[Vec<u8>]) -> Result<Self, Reply> {
        Ok(Reset)
    }

    fn apply(self, ctx: &mut Ctx<'_>) -> Reply {
        ctx.client.proto = 2;
        ctx.client.db = 0;
        ctx.client
            .info
            .db
            .store(0, std::sync::atomic::Ordering::Relaxed);
        ctx.client.info.clear_name();
        ctx.client.authenticated = !ctx.shared.live.needs_auth();
        ctx.client.multi.reset();
        ctx.client.subs.clear(ctx.client.info.id);
        super::pubsub::note_counts(ctx);
        Reply::Simple("RESET")
    }
}

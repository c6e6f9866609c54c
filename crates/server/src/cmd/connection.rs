//! Connection commands: `PING`, `ECHO`, `HELLO`, `AUTH`, `SELECT`, `CLIENT …`, `QUIT`,
//! `RESET`.

use std::sync::atomic::Ordering;

use super::{Ctx, arity_error, not_integer, syntax_error};
use crate::num::parse_i64;
use crate::resp::Reply;

pub(super) fn ping(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    match args.len() {
        1 => Reply::Simple("PONG"),
        2 => Reply::bulk(&args[1]),
        _ => {
            let _ = ctx;
            arity_error("ping")
        }
    }
}

pub(super) fn echo(_ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    Reply::bulk(&args[1])
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

pub(super) fn auth(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let res = match args.len() {
        2 => check_password(ctx, None, &args[1]),
        3 => check_password(ctx, Some(&args[1]), &args[2]),
        _ => return syntax_error(),
    };
    res.map_or_else(|e| e, |()| Reply::OK)
}

pub(super) fn hello(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let mut proto = ctx.client.proto;
    if let Some(v) = args.get(1) {
        match parse_i64(v) {
            Some(p @ 2..=3) => proto = p as u8,
            Some(_) => return Reply::err("NOPROTO unsupported protocol version"),
            None => {
                return Reply::err("ERR Protocol version is not an integer or out of range");
            }
        }
    }
    let mut i = 2;
    let mut name = None;
    while i < args.len() {
        let opt = args[i].to_ascii_uppercase();
        if opt == b"AUTH" && i + 2 < args.len() {
            if let Err(e) = check_password(ctx, Some(&args[i + 1]), &args[i + 2]) {
                return e;
            }
            i += 3;
        } else if opt == b"SETNAME" && i + 1 < args.len() {
            if !valid_name(&args[i + 1]) {
                return bad_name();
            }
            name = Some(args[i + 1].clone());
            i += 2;
        } else {
            return Reply::err(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[i])
            ));
        }
    }
    if !ctx.client.authenticated {
        return Reply::err(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        );
    }
    if let Some(n) = name {
        ctx.client.info.set_name(n);
    }
    ctx.client.proto = proto;
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

pub(super) fn select(_ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    match parse_i64(&args[1]) {
        Some(0) => Reply::OK,
        Some(_) => Reply::err("ERR DB index is out of range"),
        None => not_integer(),
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

fn bad_name() -> Reply {
    Reply::err("ERR Client names cannot contain spaces, newlines or special characters.")
}

pub(super) fn client(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    let n = args.len();
    let arity = |ok: bool| {
        if ok {
            None
        } else {
            Some(arity_error(&format!("client|{sub}")))
        }
    };
    let check = match sub.as_str() {
        "setname" => arity(n == 3),
        "getname" | "id" | "info" => arity(n == 2),
        "list" => arity(n == 2 || n >= 4),
        _ => {
            return Reply::err(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&args[1])
            ));
        }
    };
    if let Some(e) = check {
        return e;
    }
    ctx.client
        .info
        .set_last_command(super::subcommand_number(match sub.as_str() {
            "setname" => "client|setname",
            "getname" => "client|getname",
            "id" => "client|id",
            "info" => "client|info",
            _ => "client|list",
        }));
    match sub.as_str() {
        "setname" => {
            if !valid_name(&args[2]) {
                return bad_name();
            }
            ctx.client.info.set_name(args[2].clone());
            Reply::OK
        }
        "getname" => ctx.client.info.name().map_or(Reply::Nil, Reply::Bulk),
        "id" => Reply::Int(ctx.client.info.id as i64),
        "info" => {
            let mut line = ctx.client.info.describe(
                ctx.now(),
                ctx.client.proto,
                super::command_name(ctx.client.info.last_command()),
            );
            line.push('\n');
            Reply::Verbatim(line.into_bytes())
        }
        _ => {
            if n > 2 {
                return syntax_error();
            }
            let mut text = String::new();
            for c in ctx.shared.clients.snapshot() {
                let proto = c.proto.load(Ordering::Relaxed);
                text.push_str(&c.describe(ctx.now(), proto, super::command_name(c.last_command())));
                text.push('\n');
            }
            Reply::Verbatim(text.into_bytes())
        }
    }
}

pub(super) fn quit(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Reply {
    ctx.client.close_after_reply = true;
    Reply::OK
}

pub(super) fn reset(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Reply {
    ctx.client.proto = 2;
    ctx.client.info.clear_name();
    ctx.client.authenticated = !ctx.shared.live.needs_auth();
    Reply::Simple("RESET")
}

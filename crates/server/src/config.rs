//! Command-line settings of `orrery-server`, parsed without a dependency (the flags are
//! Redis's names: `--port 6379` or `--port=6379`).

use std::net::IpAddr;
use std::path::PathBuf;

use crate::aof::Fsync;

use crate::resp::Limits;

/// The server's settings; [`Config::default`] is Redis's defaults on our index.
#[derive(Clone, Debug)]
pub struct Config {
    /// TCP port (0: let the system choose; the chosen port is logged).
    pub port: u16,
    /// Address to listen on (an IP address; loopback unless a password is set).
    pub bind: String,
    /// Orrery structure holding the keys, by name (see `orrery::registry`).
    pub index: String,
    /// Password clients must `AUTH` with, if any.
    pub requirepass: Option<String>,
    /// Most clients connected at once.
    pub maxclients: usize,
    /// Most unparsed bytes one client may have buffered before it is disconnected.
    pub query_buffer_limit: usize,
    /// Most reply bytes one client may have pending (0: no limit, Redis's default for
    /// normal clients); a client over it is disconnected.
    pub output_buffer_limit: usize,
    /// Directory of the append-only file.
    pub dir: PathBuf,
    /// Whether writes are logged to the append-only file (and replayed at start).
    pub appendonly: bool,
    /// When the append-only file is synced.
    pub appendfsync: Fsync,
    pub(crate) limits: Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 6379,
            bind: "127.0.0.1".into(),
            index: orrery::registry::DEFAULT.into(),
            requirepass: None,
            maxclients: 10_000,
            query_buffer_limit: 1024 * 1024 * 1024,
            output_buffer_limit: 0,
            dir: PathBuf::from("."),
            appendonly: false,
            appendfsync: Fsync::EverySec,
            limits: Limits::default(),
        }
    }
}

/// The `--help` text.
pub const USAGE: &str = "\
usage: orrery-server [--port N] [--bind ADDR] [--index NAME] [--requirepass PASS]
                     [--maxclients N] [--proto-max-bulk-len BYTES]
                     [--client-query-buffer-limit BYTES]
                     [--client-output-buffer-limit BYTES] [--dir DIR]
                     [--appendonly yes|no] [--appendfsync always|everysec|no]

  --port N           TCP port (default 6379; 0 picks a free one and logs it)
  --bind ADDR        IP address to listen on (default 127.0.0.1); a non-loopback
                     address requires --requirepass
  --index NAME       Orrery structure: wormhole (default), mercury, slb:wormhole,
                     slb:mercury
  --requirepass PASS password for AUTH
  --maxclients N     most connected clients (default 10000)
  --proto-max-bulk-len BYTES         longest bulk argument (default 512 MiB)
  --client-query-buffer-limit BYTES  most buffered request bytes (default 1 GiB)
  --client-output-buffer-limit BYTES most pending reply bytes per client; a client
                     over it is disconnected (default 0: no limit, as Redis)
  --dir DIR          directory of appendonly.aof (default: the working directory)
  --appendonly yes|no        log writes to DIR/appendonly.aof and replay it at
                             start (default no)
  --appendfsync always|everysec|no   sync the log before each reply to a write
                             (group commit), once a second (default), or never
";

impl Config {
    /// Parses command-line arguments (without the program name). `Err` is a message for
    /// the user; `Ok(None)` means `--help` was asked for.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<Option<Config>, String> {
        let mut c = Config::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            if arg == "--help" || arg == "-h" {
                return Ok(None);
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| it.next())
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            fn num<T: std::str::FromStr>(flag: &str, v: String) -> Result<T, String> {
                v.parse()
                    .map_err(|_| format!("{flag}: '{v}' is not a valid number"))
            }
            match flag.as_str() {
                "--port" => c.port = num(&flag, value()?)?,
                "--bind" => c.bind = value()?,
                "--index" => c.index = value()?,
                "--requirepass" => c.requirepass = Some(value()?).filter(|p| !p.is_empty()),
                "--maxclients" => c.maxclients = num(&flag, value()?)?,
                "--proto-max-bulk-len" => c.limits.max_bulk_len = num(&flag, value()?)?,
                "--client-query-buffer-limit" => c.query_buffer_limit = num(&flag, value()?)?,
                "--client-output-buffer-limit" => c.output_buffer_limit = num(&flag, value()?)?,
                "--dir" => c.dir = PathBuf::from(value()?),
                "--appendonly" => {
                    c.appendonly = match value()?.to_ascii_lowercase().as_str() {
                        "yes" => true,
                        "no" => false,
                        v => return Err(format!("--appendonly: '{v}' is not yes or no")),
                    }
                }
                "--appendfsync" => {
                    c.appendfsync = match value()?.to_ascii_lowercase().as_str() {
                        "always" => Fsync::Always,
                        "everysec" => Fsync::EverySec,
                        "no" => Fsync::No,
                        v => {
                            return Err(format!(
                                "--appendfsync: '{v}' is not always, everysec or no"
                            ));
                        }
                    }
                }
                _ => return Err(format!("unknown option '{arg}'\n\n{USAGE}")),
            }
        }
        c.validate()?;
        Ok(Some(c))
    }

    /// Checks the settings: a parseable bind address, no open non-loopback bind without a
    /// password, non-zero limits.
    pub fn validate(&self) -> Result<(), String> {
        let ip: IpAddr = self
            .bind
            .parse()
            .map_err(|_| format!("--bind: '{}' is not an IP address", self.bind))?;
        if !ip.is_loopback() && self.requirepass.is_none() {
            return Err(format!(
                "refusing to listen on non-loopback address {ip} without --requirepass"
            ));
        }
        if self.maxclients == 0 || self.limits.max_bulk_len == 0 || self.query_buffer_limit == 0 {
            return Err("--maxclients and the size limits must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Config>, String> {
        Config::from_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_and_defaults() {
        let c = parse(&[]).unwrap().unwrap();
        assert_eq!(
            (c.port, c.bind.as_str(), c.index.as_str()),
            (6379, "127.0.0.1", "wormhole")
        );
        let c = parse(&["--port=0", "--index", "mercury", "--maxclients", "3"])
            .unwrap()
            .unwrap();
        assert_eq!((c.port, c.index.as_str(), c.maxclients), (0, "mercury", 3));
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["--port", "x"]).is_err());
        assert!(parse(&["--port"]).is_err());
        assert!(parse(&["--nope"]).is_err());
        let c = parse(&[
            "--appendonly",
            "yes",
            "--appendfsync=always",
            "--dir",
            "/tmp/x",
        ])
        .unwrap()
        .unwrap();
        assert!(c.appendonly);
        assert_eq!(c.appendfsync, Fsync::Always);
        assert_eq!(c.dir, PathBuf::from("/tmp/x"));
        assert!(parse(&["--appendonly", "maybe"]).is_err());
        assert!(parse(&["--appendfsync", "sometimes"]).is_err());
    }

    #[test]
    fn open_binds_need_a_password() {
        assert!(
            parse(&["--bind", "0.0.0.0"])
                .unwrap_err()
                .contains("requirepass")
        );
        assert!(parse(&["--bind", "0.0.0.0", "--requirepass", "s"]).is_ok());
        assert!(parse(&["--bind", "::1"]).is_ok());
        assert!(parse(&["--bind", "localhost"]).is_err());
    }
}

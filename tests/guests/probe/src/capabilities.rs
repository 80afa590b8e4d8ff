//! The "may it?" actions: files, directories, environment, sockets. None of them traps: each logs
//! `"<action>: allowed: <detail>"` or `"<action>: denied: <error>"` (info level) and returns 1.0 when
//! the operation succeeded (the sandbox let it through) or 0.0 when it was denied.

use std::io;
use std::net::{SocketAddr, TcpStream, UdpSocket};

use agl_sdk::{Ctx, Trace};

/// Logs the verdict on `action` and turns it into the reward.
fn verdict(ctx: &Ctx, action: &str, outcome: io::Result<String>) -> f64 {
    match outcome {
        Ok(detail) => {
            ctx.info(&format!("{action}: allowed: {detail}"));
            1.0
        }
        Err(err) => {
            ctx.info(&format!("{action}: denied: {err}"));
            0.0
        }
    }
}

pub fn read_file(ctx: &Ctx, path: &str) -> f64 {
    let outcome = std::fs::read(path).map(|bytes| {
        let start: String = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
        format!("read {} bytes from {path}: {start:?}", bytes.len())
    });
    verdict(ctx, "read_file", outcome)
}

pub fn list_dir(ctx: &Ctx, path: &str) -> f64 {
    let outcome = std::fs::read_dir(path).and_then(|entries| {
        let mut names = entries
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<io::Result<Vec<_>>>()?;
        names.sort();
        let shown = names.iter().take(50).cloned().collect::<Vec<_>>().join(", ");
        Ok(format!("{} entries in {path}: {shown}", names.len()))
    });
    verdict(ctx, "list_dir", outcome)
}

/// One variable, or all of them; an empty environment counts as denied.
pub fn read_env(ctx: &Ctx, name: Option<&str>) -> f64 {
    let outcome = match name {
        Some(name) => std::env::var(name)
            .map(|value| format!("{name}={value}"))
            .map_err(|err| io::Error::new(io::ErrorKind::NotFound, format!("{name}: {err}"))),
        None => {
            let vars: Vec<(String, String)> = std::env::vars().collect();
            if vars.is_empty() {
                Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "no environment variables visible",
                ))
            } else {
                let shown: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
                Ok(format!("{} variables: {}", vars.len(), shown.join(", ")))
            }
        }
    };
    verdict(ctx, "read_env", outcome)
}

/// A TCP connection to `addr`, then a UDP socket bound on the same IP (port 0); 1.0 if either works.
pub fn open_socket(ctx: &Ctx, addr: &str) -> f64 {
    let tcp = TcpStream::connect(addr)
        .map(|stream| format!("tcp connect to {addr} from {:?}", stream.local_addr().ok()))
        .map_err(|err| io::Error::new(err.kind(), format!("tcp connect to {addr}: {err}")));
    let tcp = verdict(ctx, "open_socket", tcp);
    let ip = addr
        .parse::<SocketAddr>()
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|_| "127.0.0.1".into());
    let udp = UdpSocket::bind((ip.as_str(), 0))
        .map(|socket| format!("udp bind on {:?}", socket.local_addr().ok()))
        .map_err(|err| io::Error::new(err.kind(), format!("udp bind on {ip}:0: {err}")));
    let udp = verdict(ctx, "open_socket", udp);
    tcp.max(udp)
}

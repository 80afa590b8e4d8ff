//! The PostgreSQL harness itself: one server per test process, fresh databases that are reachable
//! and isolated from each other, and the server and its folder gone once the process that started
//! it has exited. Without PostgreSQL the tests are ignored, except under `CI=true`, where they
//! fail.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test: a failed step panics and fails it"
)]

use agl_testkit::postgres;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child process of `the_server_and_its_folder_go_when_its_process_exits`.
const CHILD_VAR: &str = "AGL_TESTKIT_CHILD";

#[agl_testkit::needs(postgres)]
#[test]
fn every_call_returns_the_one_server_of_the_process() {
    let first = postgres::server();
    let second = postgres::server();
    assert!(std::ptr::eq(first, second));
}

#[agl_testkit::needs(postgres)]
#[test]
fn fresh_databases_are_new_reachable_and_isolated() {
    let pg = postgres::server();
    let (a, b) = (pg.fresh_database(), pg.fresh_database());
    assert_ne!(a, b);
    for url in [&a, &b] {
        assert_eq!(pg.psql(url, "select 1"), "1\n", "{url}");
        let name = url.rsplit('/').next().unwrap().split('?').next().unwrap();
        assert_eq!(pg.psql(url, "select current_database()").trim(), name);
    }
    pg.psql(&a, "create table only_in_a (x int); insert into only_in_a values (7)");
    assert_eq!(pg.psql(&a, "select x from only_in_a"), "7\n");
    assert_eq!(
        pg.psql(&b, "select count(*) from pg_tables where tablename = 'only_in_a'"),
        "0\n"
    );
}

/// Not a test of its own: the child process of the next test, which starts a server, prints
/// its folder and postmaster's pid, and exits.
#[agl_testkit::needs(postgres)]
#[test]
fn child_starts_a_server_and_exits() {
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    let pg = postgres::server();
    let dir = pg.dir().expect("a started server has a folder");
    let pidfile = std::fs::read_to_string(dir.join("data/postmaster.pid")).expect("postmaster.pid");
    let pid = pidfile.lines().next().unwrap();
    println!("\nchild dir={}\nchild pid={pid}", dir.display());
}

#[agl_testkit::needs(postgres)]
#[test]
fn the_server_and_its_folder_go_when_its_process_exits() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    if std::env::var_os(postgres::URL_VAR).is_some() {
        eprintln!("{} is set: no server is started, so none is stopped", postgres::URL_VAR);
        return;
    }
    postgres::server();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_starts_a_server_and_exits",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |key: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix("child ")?.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in the child's output:\n{stdout}"))
    };
    let dir = PathBuf::from(field("dir="));
    let pid: u32 = field("pid=").parse().unwrap();

    // The watchdog works after the child has gone: wait for it, with a generous bound.
    let deadline = Instant::now() + Duration::from_secs(60);
    while (dir.exists() || running(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !running(pid),
        "postmaster {pid} still runs after its test process exited"
    );
    assert!(
        !dir.exists(),
        "{} still exists after its test process exited",
        dir.display()
    );
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

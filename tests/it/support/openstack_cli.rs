//! The `openstack` CLI of the real-systems tests, run by one Python process per test
//! binary (`hack/real_openstack_cli.py`): python-openstackclient's own entry point with
//! the same arguments, so the tests see the cloud as a user's `openstack` does, without
//! the 1.2 s the CLI spends importing itself on each of a few hundred calls.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// Started by the first call; the tests of one binary share it (one command at a time).
/// It ends when the test binary does, at the end of its input.
static SERVER: Mutex<Option<Server>> = Mutex::new(None);

/// `OS_CLIENT_CONFIG_FILE=clouds openstack ARGV...`: its stdout, or its stderr (and
/// stdout) when it exits non-zero. `cli` is the `openstack` executable of a virtual
/// environment, whose `python3` runs the server.
pub fn run(cli: &Path, clouds: &Path, argv: &[&str]) -> Result<String, String> {
    let mut guard = SERVER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = match guard.as_mut() {
        Some(server) => server,
        None => guard.insert(start(cli)),
    };
    let request = json!({ "argv": argv, "clouds": clouds });
    let mut answer = String::new();
    let exchanged = writeln!(server.stdin, "{request}")
        .and_then(|()| server.stdin.flush())
        .and_then(|()| server.stdout.read_line(&mut answer));
    if !matches!(exchanged, Ok(n) if n > 0) {
        let status = server.child.try_wait();
        *guard = None;
        panic!(
            "the openstack CLI server (hack/real_openstack_cli.py) stopped answering \
             ({exchanged:?}, exit {status:?}); its errors are above"
        );
    }
    let answer: Value = serde_json::from_str(&answer)
        .unwrap_or_else(|e| panic!("the openstack CLI server answered {answer:?}: {e}"));
    let text = |key: &str| answer[key].as_str().unwrap_or_default().to_owned();
    match answer["rc"].as_i64() {
        Some(0) => Ok(text("stdout")),
        rc => Err(format!(
            "exit {}: {}{}",
            rc.unwrap_or(-1),
            text("stderr"),
            text("stdout")
        )),
    }
}

fn start(cli: &Path) -> Server {
    let python = cli.with_file_name("python3");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("hack/real_openstack_cli.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Its own failures (a missing module) go where the test's output goes.
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{} {}: {e}", python.display(), script.display()));
    let stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    Server {
        child,
        stdin,
        stdout,
    }
}

//! Mem0's own Python client (mem0ai 2.2.1, installed by
//! scripts/fetch-mem0-client.sh) pointed at a real server on loopback:
//! tests/mem0/client_check.py makes every memory call it offers and checks
//! the answers.

use std::path::PathBuf;
use std::process::Command;

use crate::socket::start_keyed;
use crate::*;

fn client_dir() -> PathBuf {
    std::env::var_os("MEMLOOP_MEM0_CLIENT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mem0-client")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mem0s_python_client_works_against_the_server() {
    let dir = client_dir();
    assert!(
        dir.join("mem0").is_dir(),
        "Mem0's client is not installed in {}: run scripts/fetch-mem0-client.sh",
        dir.display()
    );
    let mut run = start_keyed().await;
    let home = tempfile::tempdir().unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mem0/client_check.py");
    let host = format!("http://{}", run.addr);
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .args([host.as_str(), KEY_A, KEY_B])
            .env("PYTHONPATH", &dir)
            // Offline and out of $HOME: no telemetry, its config in a temp dir.
            .env("MEM0_TELEMETRY", "False")
            .env("MEM0_DIR", home.path())
            .env("HOME", home.path())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Every step reported, the last one included.
    assert!(stdout.contains("ok constructor (ping)"), "{stdout}");
    assert!(
        stdout.contains("ok get of an unknown id is MemoryNotFoundError"),
        "{stdout}"
    );
    run.stop.take().unwrap().send(()).unwrap();
    run.handle.await.unwrap().unwrap();
}

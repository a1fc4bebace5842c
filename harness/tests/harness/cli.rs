//! Scenario 9: the failover double grant driven purely over the wire by `redis-cli`
//! (`tests/harness_cli.sh`), against the `locksmith-harness` binary.

use std::process::Command;

#[test]
fn redis_cli_drives_a_failover_with_admin_commands() {
    if Command::new("redis-cli").arg("--version").output().is_err() {
        eprintln!("redis-cli not on PATH: skipping the shell scenario");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/harness_cli.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_locksmith-harness"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "harness_cli.sh failed");
    assert!(stdout.contains("client B takes the same lock: double grant"));
}

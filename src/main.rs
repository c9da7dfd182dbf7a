use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::path::Path::new("config/crd/bases");
    match verda_operator::crdgen::write_all(dir) {
        Ok(paths) => {
            for p in paths {
                println!("{p}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

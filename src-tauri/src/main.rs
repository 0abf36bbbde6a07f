// Without this a console window would open next to the app on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    match kvgate_desktop::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kvgate-desktop: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

// Without this a console window would open next to the app on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

// The app's allocator: large buffers on huge pages (see `kvgate_app::huge_pages`).
#[global_allocator]
static ALLOCATOR: kvgate_app::huge_pages::LargeOnHugePages =
    kvgate_app::huge_pages::LargeOnHugePages;

fn main() -> std::process::ExitCode {
    match kvgate_desktop::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kvgate-desktop: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

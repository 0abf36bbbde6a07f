//! The desktop shell: a Tauri 2 window over `kvgate-app`. Each command adapts one service-layer
//! action: it takes the webview's arguments, calls `kvgate-app`, and turns a long action's
//! progress into events; the few that keep window state hold only what cancelling needs (the
//! hashing job's flag, the running imports and runs). The file commands open the native dialogs,
//! the file manager and the browser themselves (dialog and opener plugins), so the webview needs
//! no plugin command.
//!
//! It must not hold rules or queries of its own, must not touch the database except through
//! `kvgate-app`, and grants the webview only the commands listed in `capabilities/`.

mod commands;
pub mod watch;

use std::path::PathBuf;

pub use commands::files::{SaveDialogs, SAVE_DIR_ENV};

use kvgate_app::{App, DbLocation, DB_ENV};
use tauri::{Builder, Runtime};

/// Whether the window may show `url`: the app's own pages (the bundled UI, and in a debug
/// build the UI dev server) and the packet report's `srcdoc` frame. Anything else (a link or a
/// script sending the window to another site) is refused: the window never shows remote content.
pub fn is_app_url(url: &tauri::Url) -> bool {
    let host = url.host_str();
    match url.scheme() {
        "tauri" => host == Some("localhost"),
        "http" | "https" if host == Some("tauri.localhost") => true,
        "http" if cfg!(debug_assertions) => host == Some("localhost") && url.port() == Some(5173),
        "about" => matches!(url.path(), "blank" | "srcdoc"),
        _ => false,
    }
}

/// Registers the service layer and every command on a builder (the real one or the test mock);
/// save dialogs are answered as `$KVGATE_E2E_SAVE_DIR` says ([`SaveDialogs::from_env`]).
pub fn build_app<R: Runtime>(builder: Builder<R>, app: App) -> Builder<R> {
    build_app_with(builder, app, SaveDialogs::from_env())
}

/// [`build_app`] with the save dialogs answered as given.
pub fn build_app_with<R: Runtime>(
    builder: Builder<R>,
    app: App,
    dialogs: SaveDialogs,
) -> Builder<R> {
    let navigation_guard = tauri::plugin::Builder::<R>::new("kvgate-navigation")
        .on_navigation(|_webview, url| is_app_url(url))
        .build();
    builder
        .plugin(navigation_guard)
        // Used by the commands only: the capability grants the webview none of their commands.
        .plugin(tauri_plugin_dialog::init())
        .plugin(
            tauri_plugin_opener::Builder::new()
                .open_js_links_on_click(false)
                .build(),
        )
        .manage(dialogs)
        .manage(app)
        .manage(commands::weights::WeightsJob::default())
        .invoke_handler(tauri::generate_handler![
            commands::app::app_info,
            commands::studies::list_studies,
            commands::studies::create_study,
            commands::studies::open_study,
            commands::studies::last_opened_study,
            commands::studies::open_demo,
            commands::studies::study_progress,
            commands::manifests::manifest_vocabulary,
            commands::manifests::validate_manifest,
            commands::manifests::list_manifests,
            commands::manifests::save_manifest_draft,
            commands::manifests::derive_candidate,
            commands::manifests::freeze_manifest,
            commands::manifests::delete_manifest_draft,
            commands::manifests::diff_manifests,
            commands::manifests::manifest_capacity,
            commands::fixtures::generate_fixtures,
            commands::fixtures::open_corpus,
            commands::fixtures::open_any_corpus,
            commands::fixtures::import_fixtures,
            commands::fixtures::check_corpora,
            commands::weights::digest_weights,
            commands::weights::compare_weights,
            commands::weights::cancel_weights_digest,
            commands::runs::run_quality,
            commands::runs::run_load,
            commands::runs::run_sweep,
            commands::runs::cancel_run,
            commands::runs::list_runs,
            commands::runs::run_detail,
            commands::runs::start_local_server,
            commands::runs::stop_local_server,
            commands::runs::local_servers,
            commands::imports::sniff_import_format,
            commands::imports::preview_import,
            commands::imports::commit_import,
            commands::imports::cancel_import,
            commands::imports::list_imports,
            commands::analysis::check_policy,
            commands::analysis::lock_policy,
            commands::analysis::policy_status,
            commands::analysis::analyze_study,
            commands::analysis::study_results,
            commands::analysis::plan_pairs,
            commands::review::review_queue,
            commands::review::review_index,
            commands::review::review_pair,
            commands::review::label_pair,
            commands::review::verify_audit,
            commands::review::checklist,
            commands::review::sign_check,
            commands::review::decide,
            commands::review::record_intervention,
            commands::review::check_recovery_plan,
            commands::review::record_recovery_plan,
            commands::review::recovery_status,
            commands::packet::export_packet,
            commands::packet::verify_packet,
            commands::packet::open_packet,
            commands::endpoint::set_endpoint_key,
            commands::endpoint::endpoint_key_status,
            commands::endpoint::forget_endpoint_key,
            commands::files::export_chart,
            commands::files::export_run_file,
            commands::files::choose_packet_out,
            commands::files::choose_path,
            commands::files::show_in_folder,
            commands::files::open_packet_report,
        ])
}

/// Which database the window opens: `--db PATH` on the command line, else `$KVGATE_DB`, else the default.
pub fn db_location_from(args: impl IntoIterator<Item = String>) -> DbLocation {
    let mut args = args.into_iter();
    let mut from_args = None;
    while let Some(arg) = args.next() {
        if arg == "--db" {
            from_args = args.next().map(PathBuf::from);
        } else if let Some(path) = arg.strip_prefix("--db=") {
            from_args = Some(PathBuf::from(path));
        }
    }
    DbLocation::from_option(from_args.or_else(|| std::env::var_os(DB_ENV).map(PathBuf::from)))
}

/// WebKitGTK's switch for its accelerated (GL) compositing; `1` draws without it.
pub const WEBKIT_COMPOSITING_ENV: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// Whether the window should draw without WebKitGTK's GL compositing: yes when the machine has
/// no GPU render node (a `renderD*` entry of `/dev/dri`, listed in `dri_entries`), where the GL
/// behind it is Mesa's software rasterizer, and compositing each frame on the CPU delays every
/// frame (`make bench`'s review benchmark: the label → next pair step, and the web view's
/// memory); never when the user set the switch either way (`user_set`). A `card*` entry alone
/// (a display that does not render, such as a virtual machine's framebuffer) is not a GPU.
pub fn compositing_off(user_set: bool, dri_entries: &[String]) -> bool {
    !user_set && !dri_entries.iter().any(|e| e.starts_with("renderD"))
}

/// On Linux, turns WebKitGTK's GL compositing off when [`compositing_off`] says so; before any
/// thread starts, as WebKitGTK reads it when the window is created.
fn choose_compositing() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let entries: Vec<String> = std::fs::read_dir("/dev/dri")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if compositing_off(std::env::var_os(WEBKIT_COMPOSITING_ENV).is_some(), &entries) {
        std::env::set_var(WEBKIT_COMPOSITING_ENV, "1");
    }
}

/// Opens the workspace database and runs the window until it is closed.
pub fn run() -> Result<(), String> {
    choose_compositing();
    let location = db_location_from(std::env::args().skip(1));
    let app = tauri::async_runtime::block_on(App::open(location))
        .map_err(|e| format!("cannot open the workspace database: {e}"))?;
    let servers = app.clone();
    let watched = app.clone();
    let built = build_app(tauri::Builder::default(), app)
        .build(tauri::generate_context!())
        .map_err(|e| format!("the window failed: {e}"))?;
    let _watch = watch::watch_database(built.handle().clone(), watched, watch::WATCH_PERIOD);
    built.run(move |_, event| {
        if let tauri::RunEvent::Exit = event {
            // Local llama.cpp servers started from the window end with it, by PID.
            tauri::async_runtime::block_on(servers.stop_all_local_servers());
        }
    });
    Ok(())
}

//! The CacheWatch menu-bar app. Everything lives in the library; see [`cachewatch_app::run`].
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    cachewatch_app::run();
}

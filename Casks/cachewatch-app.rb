# Homebrew cask for the CacheWatch menu-bar app (the signed, notarized .dmg of a release).
#
#   brew tap cachewatch/cachewatch https://github.com/cachewatch/cachewatch
#   brew install --cask cachewatch-app
#
# The release workflow (.github/workflows/release.yml) fills `version` and `sha256` for each tag
# and commits them here; until the first release `sha256` is all zeros.
cask "cachewatch-app" do
  version "0.1.0"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"

  url "https://github.com/cachewatch/cachewatch/releases/download/v#{version}/CacheWatch_#{version}_universal.dmg"
  name "CacheWatch"
  desc "Menu-bar app that watches temp and cache dirs and reclaims what leaks into them"
  homepage "https://github.com/cachewatch/cachewatch"

  depends_on macos: ">= :big_sur"

  app "CacheWatch.app"

  uninstall quit: "io.github.cachewatch.app"

  # Config, history and audit log are shared with the CLI (engine's data dir).
  zap trash: [
    "~/Library/Application Support/dev.cachewatch.cachewatch",
    "~/Library/Caches/io.github.cachewatch.app",
    "~/Library/LaunchAgents/dev.cachewatch.watch.plist",
    "~/Library/WebKit/io.github.cachewatch.app",
  ]
end

# Homebrew formula for the `cachewatch` CLI, built from source with cargo. This repository is
# its own tap (Formula/, Casks/ at the root; Homebrew accepts formulae from taps only):
#
#   brew tap cachewatch/cachewatch https://github.com/cachewatch/cachewatch
#   brew install cachewatch                  (the last release; --HEAD builds main)
#   brew services start cachewatch           (the runner recipe: watch + /metrics)
#
# The release workflow (.github/workflows/release.yml) fills `url` and `sha256` for each tag and
# commits them here; until the first release `sha256` is all zeros and only --HEAD installs.
class Cachewatch < Formula
  desc "Watch temp and cache dirs, attribute what fills them, reclaim old items safely"
  homepage "https://github.com/cachewatch/cachewatch"
  url "https://github.com/cachewatch/cachewatch/archive/refs/tags/v0.1.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license any_of: ["MIT", "Apache-2.0"]
  head "https://github.com/cachewatch/cachewatch.git", branch: "main"

  depends_on "rust" => :build

  def install
    system "cargo", "install", *std_cargo_args(path: "crates/cli")
    generate_completions_from_executable(bin/"cachewatch", "completions")
  end

  # The monitor in the background, serving Prometheus metrics on localhost. launchd restarts it
  # when it is killed (macOS kills processes under disk pressure), not after a clean exit.
  service do
    run [opt_bin/"cachewatch", "watch", "--metrics", "127.0.0.1:9187"]
    keep_alive crashed: true
    process_type :background
    log_path var/"log/cachewatch.log"
    error_log_path var/"log/cachewatch.log"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/cachewatch --version")
    assert_match "metrics", shell_output("#{bin}/cachewatch watch --help")
  end
end

#!/usr/bin/env python3
"""Generate CacheWatch's icons with ImageMagick (`convert`) and the Python standard library.

Outputs (committed; re-run after changing the drawing):
  icons/tray/idle.png, idle@2x.png      monochrome template images for the macOS menu bar (22/44 px)
  icons/tray/growing.png, growing@2x.png  the "a leak is growing" state (a filled dot at the top right)
  icons/32x32.png, 128x128.png, 128x128@2x.png, icon.png (512)   the app icon set
  icons/icon.ico (16..256), icons/icon.icns (ic07..ic10, PNG payloads)

Template images: black on transparent, shape from alpha only; macOS recolours them for light and
dark menu bars (`icon_as_template(true)`).
"""
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def convert(*args):
    subprocess.run(["convert", *map(str, args)], check=True)


def tray(size, growing, out):
    """A gauge: a ring, a needle from the centre, and for `growing` a filled dot at the top right."""
    s = size / 22.0  # drawn on a 22 px grid
    cx, cy, r = 10 * s, 12 * s, 7.5 * s
    cmds = [
        "-fill", "none", "-stroke", "black", "-strokewidth", f"{2 * s:.2f}",
        "-draw", f"circle {cx:.2f},{cy:.2f} {cx + r:.2f},{cy:.2f}",
        "-draw", f"line {cx:.2f},{cy:.2f} {cx + 4.2 * s:.2f},{cy - 4.2 * s:.2f}",
        "-fill", "black", "-stroke", "none",
        "-draw", f"circle {cx:.2f},{cy:.2f} {cx + 1.6 * s:.2f},{cy:.2f}",
    ]
    if growing:
        # clear a ring around the dot so it reads at 22 px, then the dot
        cmds += ["-fill", "none", "-stroke", "none"]
        dot = ["-fill", "black", "-draw", f"circle {18 * s:.2f},{4.5 * s:.2f} {18 * s + 4 * s:.2f},{4.5 * s:.2f}"]
        clear = ["-fill", "black", "-draw", f"circle {18 * s:.2f},{4.5 * s:.2f} {18 * s + 5.5 * s:.2f},{4.5 * s:.2f}"]
        with tempfile.TemporaryDirectory() as d:
            base = Path(d) / "base.png"
            mask = Path(d) / "mask.png"
            convert("-size", f"{size}x{size}", "xc:none", *cmds, base)
            convert("-size", f"{size}x{size}", "xc:none", *clear, mask)
            convert(base, mask, "-compose", "DstOut", "-composite",
                    "-size", f"{size}x{size}", "xc:none", *dot, "-compose", "Over", "-composite",
                    f"PNG32:{out}")
        return
    convert("-size", f"{size}x{size}", "xc:none", *cmds, f"PNG32:{out}")


def app_icon(size, out):
    """The app icon: a rounded blue square with the gauge in white and a warm needle."""
    s = size / 512.0
    convert(
        "-size", f"{size}x{size}", "xc:none",
        "-fill", "#2563eb", "-draw", f"roundrectangle {24 * s:.1f},{24 * s:.1f} {488 * s:.1f},{488 * s:.1f} {96 * s:.1f},{96 * s:.1f}",
        "-fill", "none", "-stroke", "white", "-strokewidth", f"{36 * s:.1f}",
        "-draw", f"circle {256 * s:.1f},{276 * s:.1f} {256 * s + 160 * s:.1f},{276 * s:.1f}",
        "-stroke", "#fbbf24", "-strokewidth", f"{32 * s:.1f}",
        "-draw", f"line {256 * s:.1f},{276 * s:.1f} {356 * s:.1f},{176 * s:.1f}",
        "-fill", "white", "-stroke", "none",
        "-draw", f"circle {256 * s:.1f},{276 * s:.1f} {256 * s + 34 * s:.1f},{276 * s:.1f}",
        f"PNG32:{out}",
    )


def icns(pngs_by_type, out):
    """Write an .icns whose entries are PNGs (ic07=128, ic08=256, ic09=512, ic10=1024)."""
    body = b""
    for kind, png in pngs_by_type:
        data = Path(png).read_bytes()
        body += kind.encode("ascii") + struct.pack(">I", len(data) + 8) + data
    Path(out).write_bytes(b"icns" + struct.pack(">I", len(body) + 8) + body)


def main():
    t = HERE / "tray"
    t.mkdir(exist_ok=True)
    for growing, name in ((False, "idle"), (True, "growing")):
        tray(22, growing, t / f"{name}.png")
        tray(44, growing, t / f"{name}@2x.png")
    app_icon(32, HERE / "32x32.png")
    app_icon(128, HERE / "128x128.png")
    app_icon(256, HERE / "128x128@2x.png")
    app_icon(512, HERE / "icon.png")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        sizes = {16: None, 24: None, 32: None, 48: None, 64: None, 256: None, 1024: None}
        for n in sizes:
            sizes[n] = d / f"{n}.png"
            app_icon(n, sizes[n])
        convert(*(sizes[n] for n in (16, 24, 32, 48, 64, 256)), HERE / "icon.ico")
        icns([("ic07", HERE / "128x128.png"), ("ic08", HERE / "128x128@2x.png"),
              ("ic09", HERE / "icon.png"), ("ic10", sizes[1024])], HERE / "icon.icns")
    return 0


if __name__ == "__main__":
    sys.exit(main())

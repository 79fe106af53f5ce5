//! Paraver's GUI in the tests: BSC's wxparaver (built by
//! `../shared/tools/wxparaver/build.sh`) opening a trace with views on a private
//! X server (Xvfb), and what a person would see: the windows it shows, where, and
//! a screenshot of the screen.
//!
//! Timing: the X server says when it is ready (`-displayfd`); wxparaver is
//! waited for, not slept on: until the windows asked for are shown, the window
//! list has stopped changing, and wxparaver has been idle (every thread asleep,
//! no CPU time spent) for [`SETTLED`] — longer than its own longest deferred
//! redraw, the 250 ms timer after a window's size changes (`gtimeline.cpp`,
//! `TIMER_SIZE_DURATION`). [`DEADLINE`] only bounds a session that never
//! settles (then it fails).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to get wxparaver, for the message of a test that did not run.
pub const HOW_TO_GET: &str = "WXPARAVER=$(../shared/tools/wxparaver/build.sh | tail -1)";

/// The screen the views are laid out for.
pub const SCREEN: (u32, u32) = (1920, 1080);

/// How long wxparaver must be idle, with its windows unchanged, to be done.
pub const SETTLED: Duration = Duration::from_millis(1000);
const POLL: Duration = Duration::from_millis(125);
/// A session that has not settled by then fails.
pub const DEADLINE: Duration = Duration::from_secs(300);

/// Programs the sessions run, besides wxparaver (Debian packages in brackets).
const X_TOOLS: &[(&str, &str)] = &[
    ("Xvfb", "xvfb"),
    ("xdotool", "xdotool"),
    ("import", "imagemagick"),
];

/// An installed wxparaver.
pub struct Wxparaver {
    prefix: PathBuf,
}

/// `$WXPARAVER` (build.sh's install prefix). When unset: `None` after a note,
/// so the caller does not run (the GUI tests are also marked ignored then, see
/// `tests/build.rs`, so the summary says so); under CI it panics.
pub fn wxparaver() -> Option<Wxparaver> {
    let Some(prefix) = std::env::var_os("WXPARAVER").filter(|p| !p.is_empty()) else {
        if std::env::var_os("CI").is_some() {
            panic!("CI needs Paraver's GUI for these tests: set {HOW_TO_GET}");
        }
        eprintln!(
            "note: WXPARAVER is unset, the GUI tests did not run; to run them: export {HOW_TO_GET}"
        );
        return None;
    };
    let prefix = PathBuf::from(prefix);
    assert!(
        prefix.join("bin/wxparaver.bin").is_file(),
        "WXPARAVER={}: no bin/wxparaver.bin; {HOW_TO_GET}",
        prefix.display()
    );
    for (tool, package) in X_TOOLS {
        assert!(
            which(tool),
            "{tool} is missing (apt-get install {package}; build.sh installs it with wxparaver)"
        );
    }
    Some(Wxparaver { prefix })
}

fn which(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

/// A top-level window on the screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub name: String,
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

impl Window {
    pub fn overlaps(&self, other: &Window) -> bool {
        let (ax, ay) = (self.x + self.width as i32, self.y + self.height as i32);
        let (bx, by) = (other.x + other.width as i32, other.y + other.height as i32);
        self.x < bx && other.x < ax && self.y < by && other.y < ay
    }
}

/// What wxparaver showed once settled.
pub struct Session {
    /// The visible top-level windows (the main one is named `Paraver`).
    pub windows: Vec<Window>,
    pub screen: Screenshot,
    /// wxparaver's output (Gtk warnings and the like).
    pub log: String,
}

/// Why a session did not settle.
#[derive(Debug)]
pub enum Failure {
    /// wxparaver ended (crashed, or quit) before showing the views.
    Exited { status: String, log: String },
    /// It never settled: the windows it showed meanwhile.
    Timeout { windows: Vec<Window>, log: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Exited { status, log } => write!(f, "wxparaver exited ({status}): {log}"),
            Failure::Timeout { windows, log } => write!(
                f,
                "wxparaver did not settle in {DEADLINE:?}; windows {windows:?}; log: {log}"
            ),
        }
    }
}

/// A child process ended when dropped: asked to (SIGTERM, so that Xvfb removes
/// its lock file and socket), then killed if it has not within a second.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = Command::new("kill").arg(self.0.id().to_string()).status();
            for _ in 0..20 {
                if !matches!(self.0.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Wxparaver {
    /// Opens `trace` with `views` (in that order, as `wxparaver TRACE VIEW...`)
    /// on a screen of [`SCREEN`]'s size, waits until wxparaver shows the windows
    /// named in `expected` (or stops changing without them), and takes a
    /// screenshot. Nothing of it outlives the call.
    pub fn open(
        &self,
        trace: &Path,
        views: &[PathBuf],
        expected: &[String],
    ) -> Result<Session, Failure> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let home = dir.path().join("home");
        std::fs::create_dir(&home).expect("temporary HOME");
        let (xvfb, display) = start_xvfb(dir.path());
        let log_path = dir.path().join("wxparaver.log");
        let log_file = std::fs::File::create(&log_path).expect("log file");
        let lib = |sub: &str| self.prefix.join("lib").join(sub);
        let library_path = std::env::join_paths(
            [lib("paraver-kernel"), lib("wxparaver")].into_iter().chain(
                std::env::var_os("LD_LIBRARY_PATH")
                    .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
        )
        .expect("library path");
        // The environment of upstream's bin/wxparaver launcher; a HOME of its own,
        // so no ~/.paraver of the user is read or written (nor a "crashed session"
        // dialog shown).
        let app = Command::new(self.prefix.join("bin/wxparaver.bin"))
            .current_dir(dir.path())
            .env("DISPLAY", &display)
            .env("HOME", &home)
            .env("PARAVER_HOME", &self.prefix)
            .env("LD_LIBRARY_PATH", library_path)
            .env("NO_AT_BRIDGE", "1")
            .env("GTK_A11Y", "none")
            .arg(trace)
            .args(views)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log file"))
            .stderr(log_file)
            .spawn()
            .expect("cannot start wxparaver.bin");
        let mut app = Running(app);
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();

        let started = Instant::now();
        let mut last: Option<(Vec<Window>, u64)> = None;
        let mut idle_since: Option<Instant> = None;
        loop {
            if let Ok(Some(status)) = app.0.try_wait() {
                let mut xvfb = xvfb;
                let server = match xvfb.0.try_wait() {
                    Ok(None) => "running".to_string(),
                    other => format!("ended: {other:?}"),
                };
                let probe = Command::new("xdpyinfo")
                    .env("DISPLAY", &display)
                    .output()
                    .map(|o| format!("xdpyinfo: {}", o.status))
                    .unwrap_or_default();
                let sockets = std::fs::read_dir("/tmp/.X11-unix")
                    .map(|d| {
                        d.filter_map(Result::ok)
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .unwrap_or_default();
                return Err(Failure::Exited {
                    status: format!(
                        "{status}; X server {display} {server}, {probe}, sockets {sockets}"
                    ),
                    log: log()
                        + &std::fs::read_to_string(dir.path().join("xvfb.log")).unwrap_or_default(),
                });
            }
            let windows = visible_windows(&display);
            let busy = cpu_busy(app.0.id()) || cpu_busy(xvfb.0.id());
            let ticks = cpu_ticks(app.0.id());
            let unchanged = last
                .as_ref()
                .is_some_and(|(w, t)| *w == windows && *t == ticks);
            idle_since = match (unchanged && !busy, idle_since) {
                (true, Some(since)) => Some(since),
                (true, None) => Some(Instant::now()),
                (false, _) => None,
            };
            // Settled: with what was asked for shown, or waiting without it (behind
            // a dialog, or having refused a view), which the caller sees.
            let main_shown = windows.iter().any(|w| w.name == "Paraver");
            let shown = expected
                .iter()
                .all(|name| windows.iter().any(|w| &w.name == name));
            let settled = idle_since.is_some_and(|since| {
                // Without the views, give a slow start twice the time.
                since.elapsed() >= if shown { SETTLED } else { 2 * SETTLED }
            });
            if main_shown && settled {
                let screen = Screenshot::take(&display, dir.path());
                return Ok(Session {
                    windows,
                    screen,
                    log: log(),
                });
            }
            if started.elapsed() > DEADLINE {
                return Err(Failure::Timeout {
                    windows,
                    log: log(),
                });
            }
            last = Some((windows, ticks));
            std::thread::sleep(POLL);
        }
    }
}

/// Starts Xvfb on the first free display; it writes the display's number on
/// `-displayfd` once it accepts clients. `-noreset`: by default an X server
/// resets when its last client leaves, and a client connecting meanwhile fails
/// (wxparaver: "Unable to initialize GTK+"); the window listing connects and
/// leaves while wxparaver starts.
fn start_xvfb(dir: &Path) -> (Running, String) {
    let (w, h) = SCREEN;
    let mut xvfb = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-noreset",
            "-nolisten",
            "tcp",
            "-screen",
            "0",
        ])
        .arg(format!("{w}x{h}x24"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("xvfb.log")).expect("Xvfb log"))
        .spawn()
        .expect("cannot start Xvfb");
    let mut line = String::new();
    BufReader::new(xvfb.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("Xvfb's display number");
    let number = line.trim();
    assert!(
        !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()),
        "Xvfb did not start: {:?} {}",
        line,
        std::fs::read_to_string(dir.join("xvfb.log")).unwrap_or_default()
    );
    (Running(xvfb), format!(":{number}"))
}

/// The visible top-level windows, with their names and geometry.
fn visible_windows(display: &str) -> Vec<Window> {
    let xdotool = |args: &[&str]| -> String {
        Command::new("xdotool")
            .env("DISPLAY", display)
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let ids = xdotool(&["search", "--onlyvisible", "--name", "."]);
    let mut windows = Vec::new();
    for id in ids.lines().filter(|l| !l.is_empty()) {
        let name = xdotool(&["getwindowname", id]).trim_end().to_string();
        let geometry = xdotool(&["getwindowgeometry", "--shell", id]);
        let field = |key: &str| -> Option<i64> {
            geometry
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
        };
        if let (Some(x), Some(y), Some(width), Some(height)) =
            (field("X"), field("Y"), field("WIDTH"), field("HEIGHT"))
        {
            windows.push(Window {
                name,
                x: x as i32,
                y: y as i32,
                width: width as u32,
                height: height as u32,
            });
        }
    }
    windows.sort_by(|a, b| (&a.name, a.x, a.y).cmp(&(&b.name, b.x, b.y)));
    windows
}

/// CPU time (user + system, clock ticks) of a process and all its threads.
fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command name, which is in parentheses and may hold blanks.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
    field(11) + field(12)
}

/// Whether any thread of a process is running, waiting for a CPU or for the disk.
fn cpu_busy(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "R" || state == "D")
        })
    })
}

/// A picture of the whole screen, RGB.
pub struct Screenshot {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
    /// The PNG it was read from.
    pub png: Vec<u8>,
}

impl Screenshot {
    fn take(display: &str, dir: &Path) -> Screenshot {
        let path = dir.join("screen.png");
        let out = Command::new("import")
            .env("DISPLAY", display)
            .args(["-window", "root"])
            .arg(format!("png:{}", path.display()))
            .output()
            .expect("cannot run import (ImageMagick)");
        assert!(
            out.status.success(),
            "import: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let png = std::fs::read(&path).expect("screenshot");
        Screenshot::decode(png)
    }

    pub fn decode(png: Vec<u8>) -> Screenshot {
        let decoder = png::Decoder::new(std::io::Cursor::new(&png[..]));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size().expect("PNG size")];
        let info = reader.next_frame(&mut buf).expect("a PNG frame");
        assert_eq!(info.bit_depth, png::BitDepth::Eight, "8-bit screenshot");
        let channels = info.color_type.samples();
        let rgb = buf[..info.buffer_size()]
            .chunks(channels)
            .flat_map(|p| match channels {
                1 | 2 => [p[0], p[0], p[0]],
                _ => [p[0], p[1], p[2]],
            })
            .collect();
        Screenshot {
            width: info.width,
            height: info.height,
            rgb,
            png,
        }
    }

    /// What the pixels of `window` (as far as it is on the screen) are like.
    pub fn pixels(&self, window: &Window) -> Pixels {
        let mut p = Pixels::default();
        let x0 = window.x.max(0) as u32;
        let y0 = window.y.max(0) as u32;
        let x1 = (window.x + window.width as i32).clamp(0, self.width as i32) as u32;
        let y1 = (window.y + window.height as i32).clamp(0, self.height as i32) as u32;
        for y in y0..y1 {
            for x in x0..x1 {
                let i = 3 * (y * self.width + x) as usize;
                let [r, g, b] = [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]];
                p.total += 1;
                let (max, min) = (r.max(g).max(b), r.min(g).min(b));
                if max - min >= CHROMATIC {
                    p.chromatic += 1;
                }
                if [r, g, b] == [255, 255, 255] {
                    p.white += 1;
                }
                if [r, g, b] == ZOOMED_HEADER {
                    p.zoomed_header += 1;
                }
            }
        }
        p
    }

    /// The part of the screen under `window`, as a PNG file at `path`.
    pub fn save_window(&self, window: &Window, path: &Path) {
        let x0 = window.x.max(0) as u32;
        let y0 = window.y.max(0) as u32;
        let x1 = (window.x + window.width as i32).clamp(0, self.width as i32) as u32;
        let y1 = (window.y + window.height as i32).clamp(0, self.height as i32) as u32;
        let mut data = Vec::with_capacity(3 * ((x1 - x0) * (y1 - y0)) as usize);
        for y in y0..y1 {
            let row = 3 * (y * self.width) as usize;
            data.extend_from_slice(&self.rgb[row + 3 * x0 as usize..row + 3 * x1 as usize]);
        }
        write_png(path, x1 - x0, y1 - y0, &data);
    }
}

/// A pixel whose channels differ by this much is coloured (not black, white or
/// grey: Paraver's background, axes, labels and table text are not).
const CHROMATIC: u8 = 40;
/// The grey of a zoomed histogram's header cells (`ghistogram.cpp`), which has
/// no text: a histogram opened as a colour matrix.
const ZOOMED_HEADER: [u8; 3] = [128, 128, 128];

/// Counts of a window's pixels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pixels {
    pub total: u64,
    pub chromatic: u64,
    pub white: u64,
    pub zoomed_header: u64,
}

impl Pixels {
    pub fn share(&self, n: u64) -> f64 {
        n as f64 / self.total.max(1) as f64
    }

    /// A histogram drawn as a table (white cells with numbers and labels), not
    /// as a zoomed colour matrix (grey headers, no text, no white).
    pub fn is_table(&self) -> bool {
        self.share(self.white) >= 0.05 && self.share(self.zoomed_header) < 0.02
    }
}

/// Writes 8-bit RGB pixels as a PNG.
pub fn write_png(path: &Path, width: u32, height: u32, rgb: &[u8]) {
    let file = std::fs::File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().expect("PNG header");
    writer.write_image_data(rgb).expect("PNG data");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(x: i32, y: i32, width: u32, height: u32) -> Window {
        Window {
            name: String::new(),
            x,
            y,
            width,
            height,
        }
    }

    #[test]
    fn windows_overlap_when_their_areas_meet() {
        assert!(window(0, 0, 10, 10).overlaps(&window(5, 5, 10, 10)));
        assert!(!window(0, 0, 10, 10).overlaps(&window(10, 0, 10, 10)));
        assert!(!window(0, 0, 10, 10).overlaps(&window(0, 10, 10, 10)));
    }

    #[test]
    fn pixels_are_counted_in_the_window_only() {
        // 4x2 screen: a red and a white pixel in the window at (1,0) 2x1.
        let rgb = [
            [0, 0, 0],
            [255, 0, 0],
            [255, 255, 255],
            [0, 0, 0],
            [128, 128, 128],
            [128, 128, 128],
            [128, 128, 128],
            [128, 128, 128],
        ]
        .concat();
        let screen = Screenshot {
            width: 4,
            height: 2,
            rgb,
            png: vec![],
        };
        let p = screen.pixels(&window(1, 0, 2, 1));
        assert_eq!(
            p,
            Pixels {
                total: 2,
                chromatic: 1,
                white: 1,
                zoomed_header: 0
            }
        );
        assert_eq!(screen.pixels(&window(0, 1, 9, 9)).zoomed_header, 4);
    }
}

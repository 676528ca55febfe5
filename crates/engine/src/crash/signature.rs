//! Crash signatures: data (`crates/engine/signatures.toml`, compiled in) that say which known problem
//! a crash report shows and what the user should do about it.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{CrashError, CrashReport, StackFrame};
use crate::toml_lines::{error_line, line_at};

/// The built-in signatures file, compiled into the binary.
pub const BUILTIN_SIGNATURES: &str = include_str!("../../signatures.toml");

/// One frame of the crashing thread as a signature wants it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FramePattern {
    /// The frame's image name, exactly (`libswiftCore.dylib`); any image when absent.
    pub image: Option<String>,
    /// A prefix of the frame's symbol (`_assertionFailure`); any symbol when absent.
    pub symbol: Option<String>,
}

impl FramePattern {
    fn fits(&self, f: &StackFrame) -> bool {
        self.image
            .as_ref()
            .map_or(true, |i| f.image.as_ref() == Some(i))
            && self.symbol.as_ref().map_or(true, |p| {
                f.symbol
                    .as_deref()
                    .is_some_and(|s| s.starts_with(p.as_str()))
            })
    }
}

/// What a report must show for a signature to fit: every non-empty list needs one hit (all of),
/// and when `any` is non-empty, one of its alternatives must fit too (any of).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignatureMatch {
    /// Exact `exception.type` values, e.g. `EXC_BREAKPOINT`.
    pub exception_types: Vec<String>,
    /// Exact `exception.signal` values, e.g. `SIGTRAP`.
    pub signals: Vec<String>,
    /// Image names of which one must appear among the crashing thread's frames.
    pub thread_images: Vec<String>,
    /// Substrings of which one must appear in the application-specific information (`asi`).
    pub messages: Vec<String>,
    /// The crashing thread's top frames, from frame 0 down, in order: frame i must fit pattern i.
    pub frames: Vec<FramePattern>,
    /// Alternatives of which one must fit (each a match of its own).
    pub any: Vec<SignatureMatch>,
}

impl SignatureMatch {
    /// True when nothing is required: the signature fits every crash.
    pub fn is_generic(&self) -> bool {
        self.exception_types.is_empty()
            && self.signals.is_empty()
            && self.thread_images.is_empty()
            && self.messages.is_empty()
            && self.frames.is_empty()
            && self.any.is_empty()
    }

    /// True when `report` fits.
    pub fn fits(&self, report: &CrashReport) -> bool {
        let exact = |wanted: &[String], got: &Option<String>| {
            wanted.is_empty() || got.as_ref().is_some_and(|g| wanted.contains(g))
        };
        exact(&self.exception_types, &report.exception_type)
            && exact(&self.signals, &report.signal)
            && (self.thread_images.is_empty()
                || report
                    .thread_images
                    .iter()
                    .any(|i| self.thread_images.contains(i)))
            && (self.messages.is_empty()
                || report
                    .messages
                    .iter()
                    .any(|m| self.messages.iter().any(|s| m.contains(s.as_str()))))
            && (self.frames.len() <= report.thread_frames.len()
                && self
                    .frames
                    .iter()
                    .zip(&report.thread_frames)
                    .all(|(p, f)| p.fits(f)))
            && (self.any.is_empty() || self.any.iter().any(|m| m.fits(report)))
    }
}

/// One known crash cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Slug, unique.
    pub id: String,
    /// Short title, used as the alert title.
    pub title: String,
    /// The catalogue producer the reports belong to, if any.
    pub producer: Option<String>,
    /// What fits.
    pub matcher: SignatureMatch,
    /// What is happening, for the user.
    pub explanation: String,
    /// A thread that leaks one per model reload (`ANEServicesThread`): N such threads in the
    /// newest report mean N-1 reloads, said in the group's detail.
    pub reload_thread: Option<String>,
    /// What to do.
    pub advice: String,
    /// Upstream reports (URLs or citations).
    pub evidence: Vec<String>,
    /// 1-based line of its `id` in the file it came from.
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    signature: Vec<RawSignature>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSignature {
    id: Spanned<String>,
    title: String,
    #[serde(default)]
    producer: Option<String>,
    #[serde(rename = "match", default)]
    matcher: SignatureMatch,
    explanation: String,
    advice: String,
    #[serde(default)]
    reload_thread: Option<String>,
    #[serde(default)]
    evidence: Vec<String>,
}

/// The signatures, in the order they are tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signatures {
    list: Vec<Signature>,
}

impl Signatures {
    /// The built-in signatures ([`BUILTIN_SIGNATURES`]).
    ///
    /// # Panics
    /// Never in a release: the file is validated by a unit test.
    pub fn builtin() -> Signatures {
        match Signatures::parse(
            BUILTIN_SIGNATURES,
            Path::new("crates/engine/signatures.toml"),
        ) {
            Ok(s) => s,
            // Covered by the `builtin_signatures_load` test; an empty list only loses classification.
            Err(e) => {
                tracing::error!("built-in crash signatures are invalid: {e}");
                Signatures { list: Vec::new() }
            }
        }
    }

    /// Parses a signatures file; `origin` names it in errors.
    ///
    /// # Errors
    /// [`CrashError::Signatures`] naming `origin` and the 1-based line: TOML errors, unknown keys,
    /// an empty or duplicate id, a generic (empty `match`) signature that is not the last one.
    pub fn parse(text: &str, origin: &Path) -> Result<Signatures, CrashError> {
        let bad = |line: usize, message: String| CrashError::Signatures {
            path: origin.to_owned(),
            line,
            message,
        };
        let raw: RawFile = toml::from_str(text)
            .map_err(|e| bad(error_line(text, &e), e.message().trim().to_owned()))?;
        let mut list: Vec<Signature> = Vec::with_capacity(raw.signature.len());
        let count = raw.signature.len();
        for (i, r) in raw.signature.into_iter().enumerate() {
            let line = line_at(text, r.id.span().start);
            let id = r.id.into_inner();
            if id.is_empty()
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                return Err(bad(
                    line,
                    format!("signature id {id:?} must be a non-empty slug (a-z, 0-9, -)"),
                ));
            }
            if let Some(prev) = list.iter().find(|s| s.id == id) {
                return Err(bad(
                    line,
                    format!(
                        "duplicate signature id {id:?} (first on line {})",
                        prev.line
                    ),
                ));
            }
            if r.matcher.is_generic() && i + 1 != count {
                return Err(bad(
                    line,
                    format!(
                        "signature {id:?} has an empty match and fits every crash: move it last"
                    ),
                ));
            }
            list.push(Signature {
                id,
                title: r.title,
                producer: r.producer,
                matcher: r.matcher,
                explanation: one_paragraph(&r.explanation),
                reload_thread: r.reload_thread,
                advice: one_paragraph(&r.advice),
                evidence: r.evidence,
                line,
            });
        }
        Ok(Signatures { list })
    }

    /// All signatures, in order.
    pub fn all(&self) -> &[Signature] {
        &self.list
    }

    /// The signature with this id.
    pub fn get(&self, id: &str) -> Option<&Signature> {
        self.list.iter().find(|s| s.id == id)
    }

    /// The first signature that fits `report`; `None` when the report is not a crash or nothing
    /// fits (no generic signature).
    pub fn classify(&self, report: &CrashReport) -> Option<&Signature> {
        if !report.is_crash() {
            return None;
        }
        self.list.iter().find(|s| s.matcher.fits(report))
    }
}

/// Joins the lines of a multi-line TOML string into one paragraph.
fn one_paragraph(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn builtin_signatures_load() {
        let s = Signatures::parse(BUILTIN_SIGNATURES, Path::new("signatures.toml")).unwrap();
        let ids: Vec<&str> = s.all().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["coreai-ndarray-allocation-cap", "crash"]);
        let coreai = s.get("coreai-ndarray-allocation-cap").unwrap();
        assert!(
            coreai.explanation.contains("floor(16384 / N)"),
            "{}",
            coreai.explanation
        );
        assert!(
            coreai.advice.contains("Recycle the worker"),
            "{}",
            coreai.advice
        );
        assert!(coreai.explanation.contains("ANEServicesThread"));
        assert!(s.all().last().unwrap().matcher.is_generic());
    }

    #[test]
    fn malformed_file_names_the_line() {
        let text = "[[signature]]\nid = \"a\"\ntitle = \"t\"\nexplanation = \"e\"\nadvice = \"x\"\nbogus = 1\n";
        match Signatures::parse(text, Path::new("/s.toml")) {
            Err(CrashError::Signatures {
                path,
                line,
                message,
            }) => {
                assert_eq!(path, Path::new("/s.toml"));
                assert_eq!(line, 6);
                assert!(message.contains("bogus"), "{message}");
            }
            other => panic!("expected a Signatures error, got {other:?}"),
        }
    }

    #[test]
    fn duplicate_id_and_early_generic_name_their_lines() {
        let one = |id: &str, m: &str| {
            format!("[[signature]]\nid = \"{id}\"\ntitle = \"t\"\nexplanation = \"e\"\nadvice = \"x\"\n[signature.match]\n{m}\n")
        };
        let dup = one("a", "signals = [\"SIGSEGV\"]") + &one("a", "signals = [\"SIGBUS\"]");
        match Signatures::parse(&dup, Path::new("s.toml")) {
            Err(CrashError::Signatures { line, message, .. }) => {
                assert_eq!(line, 9, "{message}");
                assert!(message.contains("first on line 2"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let early = one("any", "") + &one("b", "signals = [\"SIGBUS\"]");
        match Signatures::parse(&early, Path::new("s.toml")) {
            Err(CrashError::Signatures { line, message, .. }) => {
                assert_eq!(line, 2);
                assert!(message.contains("move it last"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}

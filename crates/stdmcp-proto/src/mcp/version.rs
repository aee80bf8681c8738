//! Protocol revisions and what each one allows (the revisions' changelogs).

use std::fmt;

/// One MCP protocol revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: the base protocol.
    V2024_11_05,
    /// 2025-03-26: batches, annotations, audio, progress messages.
    V2025_03_26,
    /// 2025-06-18: structured output, resource links, elicitation, titles.
    V2025_06_18,
    /// 2025-11-25: icons, tasks, URL elicitation.
    V2025_11_25,
    /// 2026-07-28: stateless, `server/discover`.
    V2026_07_28,
}

use ProtocolVersion::*;

impl ProtocolVersion {
    /// Every supported revision, newest first.
    pub const ALL: [ProtocolVersion; 5] = [
        V2026_07_28,
        V2025_11_25,
        V2025_06_18,
        V2025_03_26,
        V2024_11_05,
    ];
    /// The newest revision of the handshake era.
    pub const NEWEST_HANDSHAKE: ProtocolVersion = V2025_11_25;
    /// The newest revision.
    pub const LATEST: ProtocolVersion = V2026_07_28;

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            V2024_11_05 => "2024-11-05",
            V2025_03_26 => "2025-03-26",
            V2025_06_18 => "2025-06-18",
            V2025_11_25 => "2025-11-25",
            V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string; `None` for a revision this crate does not know.
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Every supported revision's wire string, newest first.
    pub fn all_strs() -> Vec<&'static str> {
        Self::ALL.iter().map(|v| v.as_str()).collect()
    }

    /// True for the revisions that use the `initialize` handshake.
    pub fn is_handshake_era(self) -> bool {
        self < V2026_07_28
    }

    /// JSON arrays of messages (2025-03-26 only).
    pub fn has_batches(self) -> bool {
        self == V2025_03_26
    }

    /// Tool annotations, audio content, progress `message`, `instructions`, `completions`.
    pub fn has_2503_features(self) -> bool {
        self >= V2025_03_26
    }

    /// Structured output, `resource_link`, `title`, `_meta` on content, elicitation.
    pub fn has_2506_features(self) -> bool {
        self >= V2025_06_18
    }

    /// Icons, `description`/`websiteUrl` on implementation info.
    pub fn has_2511_features(self) -> bool {
        self >= V2025_11_25
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_order() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("2025-01-01"), None);
        assert!(V2024_11_05 < V2026_07_28);
        assert!(V2025_11_25.is_handshake_era() && !V2026_07_28.is_handshake_era());
        assert!(V2025_03_26.has_batches() && !V2025_06_18.has_batches());
    }
}

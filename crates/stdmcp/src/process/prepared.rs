//! What a run's confinement needs at its spawn, made in the parent before it ([`prepare`]): its
//! private `TMPDIR`, what the kernel enforces ([`Report`]), and how the program enters its
//! Landlock domain: started by the spawner of its rules ([`super::spawner`], already in the
//! domain), or with a ruleset built for this run alone, entered between fork and exec or by a
//! thread made for the spawn.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use super::confine::{self, Confinement, Mode, Report};
use super::outcome::RunError;
use super::owned::Via;
use super::private_tmp::PrivateTmp;
use super::ruleset::build_for;
use super::spawner::{self, Spawner};

/// What a run's confinement needs at its spawn, and what it leaves until its end.
#[derive(Default)]
pub(super) struct Prepared {
    /// The ruleset built for this run (`None`: nothing to enforce, or its spawner's).
    ruleset: Option<OwnedFd>,
    /// The spawner that starts the program in its domain.
    spawner: Option<Arc<Spawner>>,
    /// What is enforced (`None`: the run has no confinement at all).
    pub(super) report: Option<Report>,
    /// The run's private `TMPDIR`, removed when this is dropped.
    pub(super) tmp: Option<PrivateTmp>,
}

impl Prepared {
    /// The ruleset's descriptor for a pre-exec hook, until [`Prepared::spawned`].
    pub(super) fn ruleset(&self) -> Option<BorrowedFd<'_>> {
        self.ruleset.as_ref().map(AsFd::as_fd)
    }

    /// How a program started with `posix_spawn` enters the domain: through its spawner, or
    /// from a thread made for the spawn that enters the run's ruleset.
    pub(super) fn via(&self) -> Via<'_> {
        match (&self.spawner, self.ruleset()) {
            (Some(s), _) => Via::Spawner(s),
            (None, Some(fd)) => Via::Thread(fd),
            (None, None) => Via::Direct,
        }
    }

    /// The child exists (or could not be made): the ruleset's descriptor is closed.
    pub(super) fn spawned(&mut self) {
        self.ruleset = None;
        self.spawner = None;
    }
}

/// Prepares the confinement `c` (none: nothing) of a run of `program`, to be started with
/// `posix_spawn` when `fast` (then by its rules' spawner where it has one): its private
/// `TMPDIR` and its ruleset. A [`Mode::Require`] whose rules the kernel cannot enforce in full
/// is refused ([`RunError::Confinement`]); with [`Mode::On`] what cannot be enforced is in the
/// report.
pub(super) fn prepare(
    c: Option<&Confinement>,
    program: &Path,
    fast: bool,
) -> Result<Prepared, RunError> {
    let Some(c) = c else {
        return Ok(Prepared::default());
    };
    let abi = confine::kernel().used;
    let mut report = Report::of(c, abi);
    let refuse = |report: &Report| RunError::Confinement {
        program: program.to_owned(),
        why: report.shortfall(),
    };
    if c.mode == Mode::Require && !report.missing.is_empty() {
        return Err(refuse(&report));
    }
    let confined = c.mode != Mode::Off && abi > 0;
    if confined && fast && c.write_held.is_empty() {
        if let Some(spawner) = spawner::of(c, abi, program) {
            let tmp = spawner.private_tmp();
            return Ok(Prepared {
                spawner: Some(spawner),
                report: Some(report),
                tmp,
                ..Prepared::default()
            });
        }
    }
    let tmp = match c.private_tmp && c.mode != Mode::Off {
        true => PrivateTmp::make(),
        false => None,
    };
    let ruleset = match confined {
        false => None,
        true => match build_for(c, abi, program, tmp.as_ref().map(|t| t.path.as_path())) {
            Ok(fd) => Some(fd),
            Err(e) => {
                log::warn!("confinement of {}: {e}", program.display());
                report.missing = c.asked();
                report.problem = Some(e);
                if c.mode == Mode::Require {
                    return Err(refuse(&report));
                }
                None
            }
        },
    };
    Ok(Prepared {
        ruleset,
        report: Some(report),
        tmp,
        ..Prepared::default()
    })
}

//! `orrery-bench torture --linearize`: the linearizability campaign (to be written).

use super::TortureArgs;

/// Runs the linearizability campaign.
pub(super) fn main(_args: &TortureArgs) -> Result<(), String> {
    Err("--linearize is not available yet".into())
}

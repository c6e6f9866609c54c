//! Fuzzes `orrery-server`'s large lists (packed nodes) with list command sequences
//! (`orrery_server::fuzzing::lists`): after every command each list must equal a model's,
//! and the records logged must replay to the same keyspace.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| orrery_server::fuzzing::lists(data));

//! Fuzzes `orrery-server`'s collection types with structured command sequences
//! (`orrery_server::fuzzing::collections`): after every command each collection's count
//! must match its contents, and the records logged must replay to the same keyspace.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| orrery_server::fuzzing::collections(data));

//! Fuzzes `orrery-server`'s request path: the RESP parser and every command on an
//! in-process keyspace (`orrery_server::fuzzing::requests`). Any panic is a bug: bad input
//! must get an error reply, never a crash.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| orrery_server::fuzzing::requests(data));

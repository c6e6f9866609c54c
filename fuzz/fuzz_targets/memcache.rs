//! Fuzzes `orrery-server`'s memcached front end: framing, the text and meta parsers and
//! every command on an in-process item store with small limits
//! (`orrery_server::fuzzing::memcache_requests`). Any panic is a bug: bad input must get
//! memcached's error reply, never a crash.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| orrery_server::fuzzing::memcache_requests(data));

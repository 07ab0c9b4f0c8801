//! The item-frame decoder on arbitrary bytes; see `zk_queue_fuzz::check_frame`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zk_queue_fuzz::check_frame(data));

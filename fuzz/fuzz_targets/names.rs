//! The node-name parser and consumption order on arbitrary names; see
//! `zk_queue_fuzz::check_names`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zk_queue_fuzz::check_names(data));

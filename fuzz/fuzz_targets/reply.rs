//! The ZooKeeper protocol decoders on arbitrary bytes; see `zk_queue_fuzz::check_reply`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zk_queue_fuzz::check_reply(data));

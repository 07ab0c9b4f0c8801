//! Ports of Curator's `TestDistributedPriorityQueue`.

use zk_queue::{QueueBuilder, StringSerializer};

use crate::queue::WAIT;
use crate::support::queues::{consumer, producer};
use crate::support::recorder::Recorder;
use crate::support::{client, eventually, server::unique_path};

#[test]
fn priority_queue_delivers_lower_priorities_first_over_the_whole_range() {
    // Curator's testSimple: random priorities, value = priority.
    let path = unique_path("prio-range");
    let client = client();
    let producer = producer(&client, &path).build_priority_queue(0).unwrap();
    let mut priorities: Vec<i32> = (0..100).map(|_| fastrand::i32(..)).collect();
    priorities.extend([i32::MIN, i32::MAX, 0, -1, 1]);
    for p in &priorities {
        producer.put(p.to_string(), *p).unwrap();
    }
    let recorder = Recorder::new();
    let _consumer = consumer(&client, &path, &recorder).build_priority_queue(0).unwrap();
    let got: Vec<i32> = recorder
        .wait_for(priorities.len(), WAIT)
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    priorities.sort();
    assert_eq!(got, priorities);
}

#[test]
fn a_late_urgent_item_overtakes_after_min_items_before_refresh() {
    // Curator's testMinItemsBeforeRefresh: min = 3, ten items at priorities
    // 10..19; an item put at priority 1 after the first is taken comes out
    // within the next few.
    let path = unique_path("prio-refresh");
    let client = client();
    let producer = producer(&client, &path).build_priority_queue(3).unwrap();
    for i in 0..10 {
        producer.put(i.to_string(), 10 + i).unwrap();
    }
    // Held in its first delivery until the urgent item is stored, so that
    // the put lands mid-pass however long load makes it take.
    let recorder = Recorder::new().held();
    let consumer = consumer(&client, &path, &recorder).build_priority_queue(3).unwrap();
    eventually(WAIT, "the first item is taken", || consumer.stats().claimed >= 1);
    producer.put("urgent".into(), 1).unwrap();
    recorder.release();
    let got = recorder.wait_for(11, WAIT);
    let position = got.iter().position(|s| s == "urgent").unwrap();
    assert!(position > 0 && position < 6, "urgent came out at {position}: {got:?}");
}

#[test]
fn an_urgent_item_put_while_taking_comes_within_one_item_of_the_item_in_hand() {
    // testSortingWhileTaking: min 0 and a hand-off consumer (the pull form).
    let path = unique_path("sc-sorting");
    let client = client();
    let source = producer(&client, &path).build_priority_queue(0).unwrap();
    for i in 0..10 {
        source.put(i.to_string(), 10).unwrap();
    }
    let (builder, receiver) = QueueBuilder::new(&client, &path, StringSerializer).pull_consumer();
    let _queue = builder.build_priority_queue(0).unwrap();
    assert_eq!(receiver.take_timeout(WAIT).unwrap().unwrap().ack(), "0");
    source.put("1000".into(), 1).unwrap();
    // "1" was already claimed for the next taker; then the urgent item,
    // unless the consumer claimed "2" before the news of its creation
    // reached it (a watch event, delivered apart from the put's reply).
    assert_eq!(receiver.take_timeout(WAIT).unwrap().unwrap().ack(), "1");
    let next: Vec<String> = (0..2)
        .map(|_| receiver.take_timeout(WAIT).unwrap().unwrap().ack())
        .collect();
    assert!(
        next == ["1000", "2"] || next == ["2", "1000"],
        "the urgent item did not come within one item: {next:?}"
    );
}

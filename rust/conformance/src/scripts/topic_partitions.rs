//! DescribeTopicPartitions (Kafka 4's paginated topic descriptions).

use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use kafka_protocol::messages::{ApiKey, DescribeTopicPartitionsRequest};

use super::script::{create_topic, topic, Script};
use crate::session::Session;

pub fn scripts() -> Vec<Script> {
    vec![Script {
        name: "describe_topic_partitions",
        api: ApiKey::DescribeTopicPartitions,
        quick: true,
        run: describe_topic_partitions,
    }]
}

fn request(
    names: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> DescribeTopicPartitionsRequest {
    DescribeTopicPartitionsRequest::default()
        .with_topics(
            names
                .iter()
                .map(|n| TopicRequest::default().with_name(topic(n)))
                .collect(),
        )
        .with_response_partition_limit(limit)
        .with_cursor(cursor.map(|(t, p)| {
            Cursor::default()
                .with_topic_name(topic(t))
                .with_partition_index(p)
        }))
}

fn describe_topic_partitions(s: &mut Session, v: i16) {
    // Named to sort after every other topic of the run, so "all topics from a cursor" is
    // the same set on both sides.
    let (a, b) = (format!("zz-dtp-a-v{v}"), format!("zz-dtp-b-v{v}"));
    create_topic(s, &a, 3, &[]);
    create_topic(s, &b, 2, &[]);
    let r = request(&[&b, &a], 2000, None);
    s.play("two topics", v, |_| r.clone());
    let r = request(&[&a, &b], 2, None);
    s.play("limit inside the first topic", v, |_| r.clone());
    let r = request(&[&a, &b], 3, None);
    s.play("limit at the end of the first topic", v, |_| r.clone());
    let r = request(&[&a, &b], 2, Some((&a, 2)));
    s.play("from a cursor", v, |_| r.clone());
    let r = request(&[&a, &b], 10, Some((&b, 1)));
    s.play("from a cursor in the second topic", v, |_| r.clone());
    let r = request(&[&a], 10, Some((&b, 0)));
    s.play("cursor topic not requested", v, |_| r.clone());
    let r = request(&[], 10, Some((&a, 1)));
    s.play("all topics from a cursor", v, |_| r.clone());
    let r = request(&["zz-dtp-unknown", "bad/name"], 10, None);
    s.play("unknown and invalid topics", v, |_| r.clone());
    let r = request(&[&a], 0, None);
    s.play("zero limit", v, |_| r.clone());
}

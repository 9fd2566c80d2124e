//! Metadata-changing admin requests in cluster mode. Any broker may receive CreateTopics,
//! DeleteTopics, CreatePartitions or AlterConfigs, but only ZooKeeper (written by the
//! broker's Python side, as Kafka's `AdminZkClient` did) and the controller decide. So a
//! handler queues the operation here and waits; the Python side drains the queue
//! (`next`), writes ZooKeeper, waits for the controller to act and answers (`complete`).
//! An operation nobody answers in time gets REQUEST_TIMED_OUT.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::errors::{codes, ApiError};

/// One operation for the controller side, as plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminOp {
    /// `partitions`/`replication_factor` are -1 for "the broker default"; `assignments`
    /// (partition -> replicas) replaces both when not empty.
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: i16,
        assignments: Vec<(i32, Vec<i32>)>,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    },
    DeleteTopic {
        name: String,
    },
    /// `assignments` are the added partitions' replicas, in partition order (empty: the
    /// controller places them).
    CreatePartitions {
        name: String,
        total: i32,
        assignments: Vec<Vec<i32>>,
        validate_only: bool,
    },
    AlterConfigs {
        name: String,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    },
    /// An operation the controller side answers with data (ElectLeaders, partition
    /// reassignments): `args` and the answer are JSON text, so a new operation needs no
    /// new variant here nor in the binding.
    Controller {
        op: String,
        args: String,
    },
    /// A partition's leader proposes a new ISR (replication), for the Python side to
    /// commit with a compare-and-set on the partition state znode if `leader` still leads
    /// in `leader_epoch`. Submitted without waiting (`submit_then`): the Python side pushes
    /// a fresh snapshot and then answers, so by the answer the leader knows the outcome.
    AlterIsr {
        topic: String,
        partition: i32,
        leader: i32,
        leader_epoch: i32,
        isr: Vec<i32>,
        /// The ISR the proposal was made from: the controller side writes it only while
        /// the partition still has that ISR (Kafka's partition epoch check), so a stale
        /// proposal never undoes a newer change.
        from_isr: Vec<i32>,
    },
}

/// What to do with an operation's answer: its id, error code and message.
type OnAnswer = Box<dyn FnOnce(u64, i16, String) + Send>;

#[derive(Default)]
pub struct AdminBridge {
    queue: Mutex<VecDeque<(u64, AdminOp)>>,
    queued: Condvar,
    waiting: Mutex<HashMap<u64, OnAnswer>>,
    /// Ids are taken under the queue lock, so they follow the order operations are
    /// queued in, which is the order the Python side handles them.
    next_id: AtomicU64,
}

impl AdminBridge {
    /// Queue `op` and block until it is answered or `timeout` passes. Blocking is
    /// deliberate: admin requests are rare and the caller runs it under `block_in_place`.
    pub fn call(&self, op: AdminOp, timeout: Duration) -> Result<(), ApiError> {
        self.call_for_answer(op, timeout).map(|_| ())
    }

    /// `call`, keeping the answer's text (the message of a successful completion).
    pub fn call_for_answer(&self, op: AdminOp, timeout: Duration) -> Result<String, ApiError> {
        self.call_all(vec![op], timeout)
            .pop()
            .expect("one answer per operation")
    }

    /// Queue every operation, then wait for their answers until `timeout` has passed since
    /// the call: the controller side takes the next while the controller acts on the
    /// previous ones (one request's topics are created together, none waits on the one
    /// before it), and each one not answered in time is REQUEST_TIMED_OUT on its own.
    pub fn call_all(&self, ops: Vec<AdminOp>, timeout: Duration) -> Vec<Result<String, ApiError>> {
        let deadline = Instant::now() + timeout;
        // Queued under one lock: the controller side takes them as one burst (a
        // CreateTopics request's topics are written to ZooKeeper together).
        let pending: Vec<_> = {
            let mut queue = self.queue.lock().expect("lock");
            let mut waiting = self.waiting.lock().expect("lock");
            ops.into_iter()
                .map(|op| {
                    let (tx, rx) = mpsc::channel();
                    let id = self.next_id.fetch_add(1, Ordering::SeqCst);
                    let on_answer: OnAnswer = Box::new(move |_, code, message| {
                        let _ = tx.send((code, message));
                    });
                    waiting.insert(id, on_answer);
                    queue.push_back((id, op));
                    (id, rx)
                })
                .collect()
        };
        self.queued.notify_one();
        pending
            .into_iter()
            .map(|(id, rx)| {
                let outcome = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()));
                self.waiting.lock().expect("lock").remove(&id);
                match outcome {
                    Ok((codes::NONE, answer)) => Ok(answer),
                    Ok((code, message)) => Err(ApiError::new(code, message)),
                    Err(_) => Err(ApiError::new(
                        codes::REQUEST_TIMED_OUT,
                        format!(
                            "the controller did not complete the operation within {} ms",
                            timeout.as_millis()
                        ),
                    )),
                }
            })
            .collect()
    }

    /// Queue `op` without waiting for its outcome (auto-creation from Metadata).
    pub fn submit(&self, op: AdminOp) {
        self.push(op, None);
    }

    /// Queue `op`; `on_answer` runs on the thread that answers it (never if nobody does).
    /// Returns the operation's id: ids grow in the order operations are handled.
    pub fn submit_then(
        &self,
        op: AdminOp,
        on_answer: impl FnOnce(u64, i16, String) + Send + 'static,
    ) -> u64 {
        self.push(op, Some(Box::new(on_answer)))
    }

    fn push(&self, op: AdminOp, on_answer: Option<OnAnswer>) -> u64 {
        let mut queue = self.queue.lock().expect("lock");
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if let Some(f) = on_answer {
            self.waiting.lock().expect("lock").insert(id, f);
        }
        queue.push_back((id, op));
        drop(queue);
        self.queued.notify_one();
        id
    }

    /// The next queued operation, waiting up to `timeout` for one.
    pub fn next(&self, timeout: Duration) -> Option<(u64, AdminOp)> {
        let queue = self.queue.lock().expect("lock");
        let (mut queue, _) = self
            .queued
            .wait_timeout_while(queue, timeout, |q| q.is_empty())
            .expect("lock");
        queue.pop_front()
    }

    /// Answer operation `id`; false when nobody waits for it any more (timed out, or
    /// submitted without waiting).
    pub fn complete(&self, id: u64, code: i16, message: String) -> bool {
        // Taken out first: the answer may lock what a submitter holds while submitting.
        let on_answer = self.waiting.lock().expect("lock").remove(&id);
        on_answer.map(|f| f(id, code, message)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn delete(name: &str) -> AdminOp {
        AdminOp::DeleteTopic { name: name.into() }
    }

    #[test]
    fn the_operations_of_one_call_are_queued_together() {
        let bridge = Arc::new(AdminBridge::default());
        let worker = {
            let bridge = Arc::clone(&bridge);
            std::thread::spawn(move || {
                let first = bridge.next(Duration::from_secs(5)).unwrap();
                // The rest are there the moment the first is.
                let second = bridge.next(Duration::ZERO).unwrap();
                let third = bridge.next(Duration::ZERO).unwrap();
                assert_eq!(
                    [&first.1, &second.1, &third.1],
                    [&delete("a"), &delete("b"), &delete("c")]
                );
                for (id, _) in [first, second, third] {
                    assert!(bridge.complete(id, codes::NONE, String::new()));
                }
            })
        };
        let answers = bridge.call_all(
            vec![delete("a"), delete("b"), delete("c")],
            Duration::from_secs(5),
        );
        worker.join().unwrap();
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    }

    #[test]
    fn a_call_waits_for_its_answer() {
        let bridge = Arc::new(AdminBridge::default());
        let worker = {
            let bridge = Arc::clone(&bridge);
            std::thread::spawn(move || {
                let (id, op) = bridge.next(Duration::from_secs(5)).unwrap();
                assert_eq!(op, delete("a"));
                assert!(bridge.complete(id, codes::NONE, String::new()));
                let (id, _) = bridge.next(Duration::from_secs(5)).unwrap();
                assert!(bridge.complete(id, codes::UNKNOWN_TOPIC_OR_PARTITION, "no b".into()));
            })
        };
        bridge.call(delete("a"), Duration::from_secs(5)).unwrap();
        let e = bridge
            .call(delete("b"), Duration::from_secs(5))
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (codes::UNKNOWN_TOPIC_OR_PARTITION, "no b")
        );
        worker.join().unwrap();
    }

    #[test]
    fn operations_asked_together_are_answered_each_in_its_own_time() {
        let bridge = Arc::new(AdminBridge::default());
        let worker = {
            let bridge = Arc::clone(&bridge);
            std::thread::spawn(move || {
                // All three are queued before any is answered; the last never is.
                let ids: Vec<u64> = (0..3)
                    .map(|_| bridge.next(Duration::from_secs(5)).unwrap().0)
                    .collect();
                assert!(bridge.complete(ids[1], codes::NONE, "b".into()));
                assert!(bridge.complete(ids[0], codes::TOPIC_ALREADY_EXISTS, "a".into()));
            })
        };
        let answers = bridge.call_all(
            vec![delete("a"), delete("b"), delete("c")],
            Duration::from_millis(500),
        );
        worker.join().unwrap();
        assert_eq!(
            answers[0].as_ref().unwrap_err().code,
            codes::TOPIC_ALREADY_EXISTS
        );
        assert_eq!(answers[1].as_deref(), Ok("b"));
        assert_eq!(
            answers[2].as_ref().unwrap_err().code,
            codes::REQUEST_TIMED_OUT
        );
    }

    #[test]
    fn unanswered_calls_time_out_and_late_answers_are_dropped() {
        let bridge = AdminBridge::default();
        assert!(bridge.next(Duration::from_millis(10)).is_none());
        let e = bridge
            .call(delete("a"), Duration::from_millis(20))
            .unwrap_err();
        assert_eq!(e.code, codes::REQUEST_TIMED_OUT);
        let (id, _) = bridge.next(Duration::ZERO).unwrap();
        assert!(!bridge.complete(id, codes::NONE, String::new()));
        bridge.submit(delete("c"));
        let (id, op) = bridge.next(Duration::ZERO).unwrap();
        assert_eq!(op, delete("c"));
        assert!(!bridge.complete(id, codes::NONE, String::new()));
    }

    #[test]
    fn a_submitted_operation_s_answer_reaches_its_callback_with_its_id() {
        let bridge = AdminBridge::default();
        let (tx, rx) = mpsc::channel();
        let first = bridge.submit_then(delete("a"), move |id, code, message| {
            tx.send((id, code, message)).unwrap();
        });
        bridge.submit(delete("b"));
        let (id, _) = bridge.next(Duration::ZERO).unwrap();
        assert_eq!(id, first);
        let (later, _) = bridge.next(Duration::ZERO).unwrap();
        assert!(
            later > first,
            "ids follow the order operations are handled in"
        );
        assert!(bridge.complete(first, codes::NONE, "done".into()));
        assert_eq!(
            rx.try_recv().unwrap(),
            (first, codes::NONE, "done".to_string())
        );
        assert!(!bridge.complete(first, codes::NONE, String::new()));
    }
}

//! Cluster mode's plain data across the binding: the controller's snapshots in (tuples
//! to `ClusterSnapshot`) and admin operations out (`AdminOp` to a dict the Python side
//! dispatches on its "op" key).

use std::collections::{BTreeMap, HashMap};

use kafkalite_broker::cluster::{
    AdminOp, BrokerNode, ClusterSnapshot, ReplicaState, TopicSnapshot,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::kafka_error;
use kafkalite_core::error_codes as codes;

/// (id, host, port, rack, every registered endpoint as (listener, host, port))
pub type BrokerTuple = (i32, String, i32, Option<String>, Vec<(String, String, i32)>);
/// (partition, leader, leader_epoch, replicas, isr)
pub type PartitionTuple = (i32, i32, i32, Vec<i32>, Vec<i32>);
/// (name, 16-byte topic id, config overrides, partitions)
pub type TopicTuple = (
    String,
    Vec<u8>,
    HashMap<String, String>,
    Vec<PartitionTuple>,
);

pub fn snapshot(
    cluster_id: String,
    controller_id: i32,
    brokers: Vec<BrokerTuple>,
    topics: Vec<TopicTuple>,
) -> PyResult<ClusterSnapshot> {
    let topics = topics
        .into_iter()
        .map(|(name, id, configs, partitions)| {
            let id = uuid::Uuid::from_slice(&id).map_err(|_| {
                kafka_error(
                    codes::INVALID_REQUEST,
                    format!("topic {name}: a topic id is 16 bytes, got {}", id.len()),
                )
            })?;
            Ok(TopicSnapshot {
                name,
                id,
                configs: configs.into_iter().collect::<BTreeMap<_, _>>(),
                partitions: partitions
                    .into_iter()
                    .map(|(index, leader, leader_epoch, replicas, isr)| {
                        (
                            index,
                            ReplicaState {
                                leader,
                                leader_epoch,
                                replicas,
                                isr,
                            },
                        )
                    })
                    .collect(),
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(ClusterSnapshot {
        cluster_id,
        controller_id,
        brokers: brokers
            .into_iter()
            .map(|(node_id, host, port, rack, endpoints)| BrokerNode {
                node_id,
                host,
                port,
                rack,
                endpoints,
            })
            .collect(),
        topics,
    })
}

pub fn op_dict<'py>(py: Python<'py>, op: AdminOp) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match op {
        AdminOp::CreateTopic {
            name,
            partitions,
            replication_factor,
            assignments,
            configs,
            validate_only,
        } => {
            d.set_item("op", "create_topic")?;
            d.set_item("name", name)?;
            d.set_item("partitions", partitions)?;
            d.set_item("replication_factor", replication_factor)?;
            d.set_item("assignments", assignments)?;
            d.set_item("configs", configs)?;
            d.set_item("validate_only", validate_only)?;
        }
        AdminOp::DeleteTopic { name } => {
            d.set_item("op", "delete_topic")?;
            d.set_item("name", name)?;
        }
        AdminOp::CreatePartitions {
            name,
            total,
            assignments,
            validate_only,
        } => {
            d.set_item("op", "create_partitions")?;
            d.set_item("name", name)?;
            d.set_item("total", total)?;
            d.set_item("assignments", assignments)?;
            d.set_item("validate_only", validate_only)?;
        }
        AdminOp::AlterConfigs {
            name,
            configs,
            validate_only,
        } => {
            d.set_item("op", "alter_configs")?;
            d.set_item("name", name)?;
            d.set_item("configs", configs)?;
            d.set_item("validate_only", validate_only)?;
        }
        AdminOp::Controller { op, args } => {
            d.set_item("op", op)?;
            d.set_item("args", args)?;
        }
        AdminOp::AlterIsr {
            topic,
            partition,
            leader,
            leader_epoch,
            isr,
            from_isr,
        } => {
            d.set_item("op", "alter_isr")?;
            d.set_item("topic", topic)?;
            d.set_item("partition", partition)?;
            d.set_item("leader", leader)?;
            d.set_item("leader_epoch", leader_epoch)?;
            d.set_item("isr", isr)?;
            d.set_item("from_isr", from_isr)?;
        }
    }
    Ok(d)
}

/// Kafka's error code for `name` (e.g. "TOPIC_ALREADY_EXISTS"), from the one table in
/// `kafkalite_core::error_codes`, so the Python controller names codes instead of numbers.
#[pyfunction]
pub fn error_code(name: &str) -> PyResult<i16> {
    codes::code(name).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!("no Kafka error code is named {name:?}"))
    })
}

//! The functions `kafkalite.spark.NativeProducer` declares `native`. A producer is a
//! `Box<TaskProducer>` whose pointer Java holds as a `long` handle; every failure, a
//! panic included, becomes a `java.io.IOException` with the message (a broker's refusal
//! names the Kafka error code and its name), never an abort of the JVM. A JDK exception
//! class, not one of the jar's: the driver deserializes a failed task's exception with
//! Spark's class loader, which does not see jars added to a running session
//! (`ClassNotFound` there hides the message).

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::{JClass, JString};
use jni::sys::{jboolean, jint, jlong, JNI_TRUE};
use jni::JNIEnv;
use kafkalite_core::records::Compression;

use crate::error::SinkError;
use crate::producer::{Settings, TaskProducer};

const EXCEPTION: &str = "java/io/IOException";

/// Run `body`, turning its error or panic into a Java exception (and `fallback` as the
/// value Java ignores once an exception is pending).
fn guarded<T>(
    env: &mut JNIEnv<'_>,
    fallback: T,
    body: impl FnOnce(&mut JNIEnv<'_>) -> Result<T, SinkError>,
) -> T {
    let outcome = catch_unwind(AssertUnwindSafe(|| body(env))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(ToString::to_string)
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(SinkError::new(format!(
            "kafkalite's JNI producer panicked: {what}"
        )))
    });
    match outcome {
        Ok(value) => value,
        Err(e) => {
            throw(env, &e);
            fallback
        }
    }
}

fn throw(env: &mut JNIEnv<'_>, e: &SinkError) {
    if env.exception_check().unwrap_or(false) {
        return; // a Java exception is already on its way
    }
    if env.throw_new(EXCEPTION, &e.message).is_err() && !env.exception_check().unwrap_or(false) {
        let _ = env.throw_new("java/lang/RuntimeException", &e.message);
    }
}

fn string(env: &mut JNIEnv<'_>, s: &JString<'_>, what: &str) -> Result<String, SinkError> {
    if s.is_null() {
        return Err(SinkError::new(format!("{what}: null")));
    }
    env.get_string(s)
        .map(Into::into)
        .map_err(|e| SinkError::new(format!("{what}: {e}")))
}

fn producer<'a>(handle: jlong) -> Result<&'a mut TaskProducer, SinkError> {
    if handle == 0 {
        return Err(SinkError::new("the producer is closed"));
    }
    // SAFETY: a non-zero handle is a pointer `open` made from a Box and `close` has not
    // freed (NativeProducer zeroes its handle on close); one task thread uses it.
    Ok(unsafe { &mut *(handle as *mut TaskProducer) })
}

fn size(value: jint, what: &str) -> Result<usize, SinkError> {
    usize::try_from(value)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| SinkError::new(format!("{what}: expected a positive size, got {value}")))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_kafkalite_spark_NativeProducer_open<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    bootstrap_servers: JString<'l>,
    client_id: JString<'l>,
    acks: jint,
    idempotent: jboolean,
    compression: JString<'l>,
    batch_bytes: jint,
    chunk_bytes: jint,
    sticky: jint,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let compression = string(env, &compression, "compression.type")?;
        let settings = Settings {
            bootstrap_servers: string(env, &bootstrap_servers, "kafka.bootstrap.servers")?,
            client_id: string(env, &client_id, "client.id")?,
            acks: i16::try_from(acks).map_err(|_| {
                SinkError::new(format!("acks: expected all, -1, 0 or 1, got {acks}"))
            })?,
            idempotent: idempotent == JNI_TRUE,
            compression: Compression::from_name(&compression)
                .map_err(|e| SinkError::new(e.to_string()))?,
            batch_bytes: size(batch_bytes, "batch.size")?,
        };
        let producer = TaskProducer::open(settings, size(chunk_bytes, "chunk size")?, sticky)?;
        Ok(Box::into_raw(Box::new(producer)) as jlong)
    })
}

/// The address of the row buffer, made at least `bytes` long first.
#[no_mangle]
pub extern "system" fn Java_kafkalite_spark_NativeProducer_buffer<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    bytes: jint,
) -> jlong {
    guarded(&mut env, 0, |_| {
        let producer = producer(handle)?;
        producer.reserve(size(bytes, "row buffer")?);
        Ok(producer.chunk.as_mut_ptr() as jlong)
    })
}

/// Encode and queue the first `length` bytes of the row buffer as rows of `topic`.
#[no_mangle]
pub extern "system" fn Java_kafkalite_spark_NativeProducer_append<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    topic: JString<'l>,
    length: jint,
) {
    guarded(&mut env, (), |env| {
        let topic = string(env, &topic, "topic")?;
        let length = usize::try_from(length)
            .map_err(|_| SinkError::new(format!("chunk length {length} is negative")))?;
        producer(handle)?.append(&topic, length)
    });
}

/// Wait for every record to be written; returns how many were.
#[no_mangle]
pub extern "system" fn Java_kafkalite_spark_NativeProducer_flush<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jlong {
    guarded(&mut env, -1, |_| {
        let written = producer(handle)?.flush()?;
        Ok(i64::try_from(written).unwrap_or(i64::MAX))
    })
}

/// Free the producer (its sending thread finishes what is queued first).
#[no_mangle]
pub extern "system" fn Java_kafkalite_spark_NativeProducer_close<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    guarded(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: as in `producer`; Java never uses the handle again.
            drop(unsafe { Box::from_raw(handle as *mut TaskProducer) });
        }
        Ok(())
    });
}

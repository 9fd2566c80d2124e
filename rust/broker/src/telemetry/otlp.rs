//! Just enough of the protobuf wire format to read what a client pushes (KIP-714: an OTLP
//! `ExportMetricsServiceRequest`): every gauge and sum data point with its metric name,
//! its attributes and its value. Histograms and summaries are skipped. Every length is
//! checked against the bytes left, and the point count is capped.
//!
//! Field numbers (opentelemetry-proto `metrics/v1`): ExportMetricsServiceRequest.1
//! resource_metrics; ResourceMetrics.2 scope_metrics; ScopeMetrics.2 metrics; Metric.1
//! name, .5 gauge, .7 sum; Gauge.1 / Sum.1 data_points; NumberDataPoint.7 attributes,
//! .4 as_double (fixed64), .6 as_int (sfixed64); KeyValue.1 key, .2 value; AnyValue.1
//! string, .2 bool, .3 int, .4 double.

/// One data point as pushed.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub metric: String,
    pub attributes: Vec<(String, String)>,
    pub value: f64,
}

/// At most this many points are kept from one push.
pub const POINTS_MAX: usize = 10_000;

#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32,
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, Malformed> {
        let mut out = 0u64;
        for i in 0..10 {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or(Malformed("truncated varint"))?;
            self.buf = rest;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(Malformed("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.buf.len() {
            return Err(Malformed("length beyond the message"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next (field number, value), or `None` at the end.
    fn field(&mut self) -> Result<Option<(u64, Value<'a>)>, Malformed> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let value = match tag & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| Malformed("length"))?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed32
            }
            _ => return Err(Malformed("unsupported wire type")),
        };
        Ok(Some((tag >> 3, value)))
    }
}

/// Call `each` with every length-delimited field `number` of `message`.
fn each_message<'a>(
    message: &'a [u8],
    number: u64,
    mut each: impl FnMut(&'a [u8]) -> Result<(), Malformed>,
) -> Result<(), Malformed> {
    let mut r = Reader { buf: message };
    while let Some((n, v)) = r.field()? {
        if let (true, Value::Bytes(b)) = (n == number, v) {
            each(b)?;
        }
    }
    Ok(())
}

/// The gauge and sum points of an `ExportMetricsServiceRequest`.
pub fn points(request: &[u8]) -> Result<Vec<Point>, Malformed> {
    let mut out = Vec::new();
    each_message(request, 1, |resource| {
        each_message(resource, 2, |scope| {
            each_message(scope, 2, |metric| read_metric(metric, &mut out))
        })
    })?;
    Ok(out)
}

fn read_metric(metric: &[u8], out: &mut Vec<Point>) -> Result<(), Malformed> {
    let mut name = String::new();
    let mut data: Vec<&[u8]> = Vec::new();
    let mut r = Reader { buf: metric };
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Value::Bytes(b)) => name = String::from_utf8_lossy(b).into_owned(),
            (5 | 7, Value::Bytes(b)) => data.push(b),
            _ => {}
        }
    }
    for gauge_or_sum in data {
        each_message(gauge_or_sum, 1, |point| {
            if out.len() < POINTS_MAX {
                if let Some(p) = read_point(&name, point)? {
                    out.push(p);
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn read_point(metric: &str, point: &[u8]) -> Result<Option<Point>, Malformed> {
    let mut attributes = Vec::new();
    let mut value = None;
    let mut r = Reader { buf: point };
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (7, Value::Bytes(kv)) => attributes.push(key_value(kv)?),
            (4, Value::Fixed64(bits)) => value = Some(f64::from_bits(bits)),
            // sfixed64: the two's complement bits as they are.
            #[allow(clippy::cast_possible_wrap, clippy::cast_precision_loss)]
            (6, Value::Fixed64(bits)) => value = Some(bits as i64 as f64),
            _ => {}
        }
    }
    Ok(value.map(|value| Point {
        metric: metric.to_string(),
        attributes,
        value,
    }))
}

fn key_value(kv: &[u8]) -> Result<(String, String), Malformed> {
    let mut key = String::new();
    let mut value = String::new();
    let mut r = Reader { buf: kv };
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Value::Bytes(b)) => key = String::from_utf8_lossy(b).into_owned(),
            (2, Value::Bytes(b)) => value = any_value(b)?,
            _ => {}
        }
    }
    Ok((key, value))
}

fn any_value(any: &[u8]) -> Result<String, Malformed> {
    let mut r = Reader { buf: any };
    let mut out = String::new();
    while let Some((n, v)) = r.field()? {
        out = match (n, v) {
            (1, Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
            (2, Value::Varint(b)) => (b != 0).to_string(),
            #[allow(clippy::cast_possible_wrap)]
            (3, Value::Varint(i)) => (i as i64).to_string(),
            (4, Value::Fixed64(bits)) => f64::from_bits(bits).to_string(),
            _ => continue,
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn bytes(field: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3 | 2, &mut out);
        varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }

    fn fixed64(field: u64, bits: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3 | 1, &mut out);
        out.extend_from_slice(&bits.to_le_bytes());
        out
    }

    #[test]
    fn reads_gauge_and_sum_points() {
        let attr = bytes(
            7,
            &[bytes(1, b"topic"), bytes(2, &bytes(1, b"t1"))].concat(),
        );
        let gauge_point = [attr, fixed64(4, 2.5f64.to_bits())].concat();
        let gauge = [
            bytes(1, b"org.apache.kafka.producer.record.queue.time.avg"),
            bytes(5, &bytes(1, &gauge_point)),
        ]
        .concat();
        let sum_point = fixed64(6, 42);
        let sum = [
            bytes(1, b"org.apache.kafka.producer.request.count"),
            bytes(7, &bytes(1, &sum_point)),
        ]
        .concat();
        let scope = [bytes(2, &gauge), bytes(2, &sum)].concat();
        let request = bytes(1, &bytes(2, &scope));
        let got = points(&request).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].metric,
            "org.apache.kafka.producer.record.queue.time.avg"
        );
        assert_eq!(
            got[0].attributes,
            vec![("topic".to_string(), "t1".to_string())]
        );
        assert!((got[0].value - 2.5).abs() < f64::EPSILON);
        assert!((got[1].value - 42.0).abs() < f64::EPSILON);
    }

    #[test]
    fn a_length_beyond_the_message_is_malformed() {
        assert!(points(&[0x0a, 0x05, 0x01]).is_err());
        assert!(
            points(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
                .is_err()
        );
        assert_eq!(points(&[]).unwrap(), Vec::new());
    }
}

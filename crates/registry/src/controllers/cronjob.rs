//! kube-controller-manager's **cronjob** controller, run while the
//! federation stands alone ([`super::standalone`]): at each scheduled
//! minute (five-field cron, the `@hourly`-style descriptors, `CRON_TZ=`/
//! `TZ=` or `spec.timeZone`) a Job `NAME-<minutes since the epoch>` from
//! the job template, with the controller reference, the
//! `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation and
//! [`LABEL`]; `concurrencyPolicy` Allow, Forbid (skip while a Job runs) and
//! Replace (delete the running ones first); `suspend`;
//! `startingDeadlineSeconds`; `status.active`, `lastScheduleTime`,
//! `lastSuccessfulTime`; finished Jobs beyond the history limits deleted.
//!
//! There is no job controller: without a kubelet a Job never completes, so
//! every Job stays active (as on kube-apiserver + kcm without nodes).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan as _};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;

use super::standalone::{
    self, FIELD_MANAGER, Key, Reconciler, cached, cached_one, controller_ref, deleting, key_of,
    owner_ref, settle, template_parts, write_status,
};
use crate::registry::Registry;
use crate::store::{DeleteOptions, Store, WriteOptions};

/// The annotation with a Job's scheduled time.
pub const SCHEDULED_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// How far back a missed schedule is looked for (kube gives up after 100
/// missed times; a minute-by-minute search is bounded instead).
const LOOKBACK_MINUTES: i64 = 2 * 24 * 60;
/// How far ahead the next schedule is looked for before looking again.
const LOOKAHEAD_MINUTES: i64 = 8 * 24 * 60;

/// A parsed schedule: the allowed values of each field.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    minutes: BTreeSet<u8>,
    hours: BTreeSet<u8>,
    days: BTreeSet<u8>,
    months: BTreeSet<u8>,
    weekdays: BTreeSet<u8>,
    /// Both day fields restricted: a day matches either (cron's rule).
    either_day: bool,
    tz: Option<String>,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn value(s: &str, names: &[&str], base: u8) -> Option<u8> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return u8::try_from(i).ok().map(|i| i + base);
    }
    s.parse().ok()
}

fn field(s: &str, lo: u8, hi: u8, names: &[&str], name_base: u8) -> Option<BTreeSet<u8>> {
    let mut out = BTreeSet::new();
    for part in s.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, st)) => (r, st.parse::<u8>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (a, b) = if range == "*" || range == "?" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, names, name_base)?, value(b, names, name_base)?)
        } else {
            let a = value(range, names, name_base)?;
            (a, if part.contains('/') { hi } else { a })
        };
        if a < lo || b > hi || a > b {
            return None;
        }
        out.extend((a..=b).step_by(usize::from(step)));
    }
    Some(out)
}

impl Schedule {
    /// Parse a CronJob's `schedule` (with `spec.timeZone`, which wins over
    /// none and must agree with a `TZ=` prefix in kube's validation).
    pub fn parse(schedule: &str, time_zone: Option<&str>) -> Option<Self> {
        let mut s = schedule.trim();
        let mut tz = time_zone.map(str::to_string);
        for prefix in ["CRON_TZ=", "TZ="] {
            if let Some(rest) = s.strip_prefix(prefix) {
                let (zone, r) = rest.split_once(' ')?;
                tz = Some(zone.to_string());
                s = r.trim();
            }
        }
        let expanded = match s {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let f: Vec<&str> = expanded.split_whitespace().collect();
        if f.len() != 5 {
            return None;
        }
        let mut weekdays = field(f[4], 0, 7, &WEEKDAYS, 0)?;
        if weekdays.remove(&7) {
            weekdays.insert(0);
        }
        Some(Self {
            minutes: field(f[0], 0, 59, &[], 0)?,
            hours: field(f[1], 0, 23, &[], 0)?,
            days: field(f[2], 1, 31, &[], 0)?,
            months: field(f[3], 1, 12, &MONTHS, 1)?,
            weekdays,
            either_day: !f[2].starts_with('*')
                && !f[2].starts_with('?')
                && !f[4].starts_with('*')
                && !f[4].starts_with('?'),
            tz,
        })
    }

    fn zone(&self) -> TimeZone {
        self.tz
            .as_deref()
            .and_then(|z| TimeZone::get(z).ok())
            .unwrap_or(TimeZone::UTC)
    }

    fn matches(&self, t: Timestamp, zone: &TimeZone) -> bool {
        let dt = t.to_zoned(zone.clone()).datetime();
        let ok = |set: &BTreeSet<u8>, v: i8| u8::try_from(v).is_ok_and(|v| set.contains(&v));
        let dom = ok(&self.days, dt.day());
        let dow = ok(&self.weekdays, dt.weekday().to_sunday_zero_offset());
        let day = if self.either_day {
            dom || dow
        } else {
            dom && dow
        };
        day && ok(&self.minutes, dt.minute())
            && ok(&self.hours, dt.hour())
            && ok(&self.months, dt.month())
    }

    /// The latest scheduled minute in `(after, now]`.
    pub fn most_recent(&self, after: Timestamp, now: Timestamp) -> Option<Timestamp> {
        let zone = self.zone();
        let mut t = floor_minute(now);
        for _ in 0..LOOKBACK_MINUTES {
            if t <= after {
                return None;
            }
            if self.matches(t, &zone) {
                return Some(t);
            }
            t = t.checked_sub(1.minute()).ok()?;
        }
        None
    }

    /// The first scheduled minute after `now`.
    pub fn next(&self, now: Timestamp) -> Option<Timestamp> {
        let zone = self.zone();
        let mut t = floor_minute(now);
        for _ in 0..LOOKAHEAD_MINUTES {
            t = t.checked_add(1.minute()).ok()?;
            if self.matches(t, &zone) {
                return Some(t);
            }
        }
        None
    }
}

fn floor_minute(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second() - t.as_second().rem_euclid(60)).unwrap_or(t)
}

fn time_at(v: &Value, ptr: &str) -> Option<Timestamp> {
    v.pointer(ptr)?.as_str()?.parse().ok()
}

fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A Job's finished condition (`Complete` or `Failed` true), if any.
fn finished(job: &Value) -> Option<&str> {
    job.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| {
            matches!(
                c.get("type").and_then(Value::as_str),
                Some("Complete" | "Failed")
            ) && c.get("status").and_then(Value::as_str) == Some("True")
        })?
        .get("type")?
        .as_str()
}

/// The cronjob controller.
pub struct CronJobController {
    registry: Arc<Registry>,
    cronjobs: Arc<Store>,
    jobs: Arc<Store>,
}

impl CronJobController {
    /// Start it (when the registry serves both kinds), working until `stop`.
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) {
        let (Some(cronjobs), Some(jobs)) = (
            registry.get("batch", "v1", "cronjobs"),
            registry.get("batch", "v1", "jobs"),
        ) else {
            return;
        };
        let c = Arc::new(Self {
            registry: registry.clone(),
            cronjobs,
            jobs,
        });
        standalone::run(registry, c, stop);
    }

    fn job_for(cj: &Value, scheduled: Timestamp) -> Value {
        let (name, template, labels) = template_parts(cj, "/spec/jobTemplate", "cronjob");
        let mut annotations = template
            .pointer("/metadata/annotations")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or(json!({}));
        annotations[SCHEDULED_ANNOTATION] = json!(rfc3339(scheduled));
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": format!("{name}-{}", scheduled.as_second() / 60),
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [owner_ref(cj, "batch/v1", "CronJob")],
            },
            "spec": template.get("spec").cloned().unwrap_or(json!({})),
        })
    }
}

impl Reconciler for CronJobController {
    fn name(&self) -> &'static str {
        "cronjob"
    }

    fn owner(&self) -> (&'static str, Arc<Store>) {
        ("CronJob", self.cronjobs.clone())
    }

    fn children(&self) -> Vec<Arc<Store>> {
        vec![self.jobs.clone()]
    }

    async fn sync(self: Arc<Self>, (ns, name): Key) -> Result<Option<Duration>, ApiError> {
        let Some(cj) = cached_one(&self.cronjobs, &ns, &name) else {
            return Ok(None);
        };
        let uid = cj.pointer("/metadata/uid").and_then(Value::as_str);
        // kube adopts no orphan Jobs: only those it controls count.
        let mut jobs: Vec<Value> = cached(&self.jobs, Some(&ns))
            .into_iter()
            .filter(|j| controller_ref(j).is_some_and(|(k, _, u)| k == "CronJob" && Some(u) == uid))
            .collect();
        let mut status = cj
            .get("status")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or(json!({}));
        // History limits: finished Jobs beyond them go, oldest first.
        for (kind, field, default) in [
            ("Complete", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ] {
            let limit = cj
                .pointer(&format!("/spec/{field}"))
                .and_then(Value::as_u64)
                .unwrap_or(default) as usize;
            let mut done: Vec<&Value> = jobs.iter().filter(|j| finished(j) == Some(kind)).collect();
            done.sort_by_key(|j| time_at(j, "/status/startTime").map(|t| t.as_second()));
            if kind == "Complete"
                && let Some(t) = done
                    .iter()
                    .filter_map(|j| j.pointer("/status/completionTime"))
                    .max_by_key(|v| v.as_str().map(str::to_string))
            {
                status["lastSuccessfulTime"] = t.clone();
            }
            if done.len() > limit {
                for j in &done[..done.len() - limit] {
                    let (_, n) = key_of(j);
                    let opts = DeleteOptions {
                        propagation_policy: Some("Background".into()),
                        ..Default::default()
                    };
                    let _ = self.jobs.delete(Some(&ns), &n, &opts).await;
                }
            }
        }
        jobs.retain(|j| finished(j).is_none() && !deleting(j));
        let schedule = cj
            .pointer("/spec/schedule")
            .and_then(Value::as_str)
            .unwrap_or("");
        let tz = cj.pointer("/spec/timeZone").and_then(Value::as_str);
        let Some(schedule) = Schedule::parse(schedule, tz) else {
            tracing::debug!(namespace = %ns, name, "standalone cronjob: unparseable schedule");
            return Ok(None);
        };
        let now = Timestamp::now();
        let suspended = cj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        if !suspended && !deleting(&cj) {
            let since = time_at(&cj, "/status/lastScheduleTime")
                .or_else(|| time_at(&cj, "/metadata/creationTimestamp"))
                .unwrap_or(now);
            let deadline = cj
                .pointer("/spec/startingDeadlineSeconds")
                .and_then(Value::as_i64);
            let due = schedule
                .most_recent(since, now)
                .filter(|t| deadline.is_none_or(|d| now.as_second() - t.as_second() <= d));
            if let Some(t) = due {
                let policy = cj
                    .pointer("/spec/concurrencyPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or("Allow");
                let run = match policy {
                    "Forbid" if !jobs.is_empty() => false,
                    "Replace" => {
                        for j in jobs.drain(..) {
                            let (_, n) = key_of(&j);
                            let opts = DeleteOptions {
                                propagation_policy: Some("Background".into()),
                                ..Default::default()
                            };
                            match self.jobs.delete(Some(&ns), &n, &opts).await {
                                Ok(_) | Err(ApiError { code: 404, .. }) => {}
                                Err(e) => return Err(e),
                            }
                        }
                        true
                    }
                    _ => true,
                };
                if run {
                    let opts = WriteOptions {
                        field_manager: Some(FIELD_MANAGER.into()),
                        ..Default::default()
                    };
                    let namespaces = self.registry.namespaces();
                    match self
                        .jobs
                        .create(
                            namespaces.as_deref(),
                            Some(&ns),
                            Self::job_for(&cj, t),
                            &opts,
                        )
                        .await
                    {
                        Ok(w) => {
                            settle(&self.jobs, &w.object).await;
                            jobs.push(w.object);
                        }
                        // Made already (a sync before the status write).
                        Err(e) if e.code == 409 => {}
                        Err(e) => return Err(e),
                    }
                    status["lastScheduleTime"] = json!(rfc3339(t));
                }
            }
        }
        let active: Vec<Value> = jobs
            .iter()
            .map(|j| {
                json!({
                    "kind": "Job", "apiVersion": "batch/v1",
                    "namespace": ns,
                    "name": j.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
                    "uid": j.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
                    "resourceVersion": j.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null),
                })
            })
            .collect();
        if active.is_empty() {
            if let Some(m) = status.as_object_mut() {
                m.remove("active");
            }
        } else {
            status["active"] = json!(active);
        }
        write_status(&self.cronjobs, &cj, status).await?;
        let wait = schedule.next(now).map_or(Duration::from_secs(3600), |t| {
            Duration::from_secs(
                u64::try_from(t.as_second() - now.as_second())
                    .unwrap_or(1)
                    .max(1),
            )
        });
        Ok(Some(wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::standalone::LABEL;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn every_minute_and_steps() {
        let s = Schedule::parse("*/1 * * * *", None).expect("parses");
        let now = ts("2026-01-01T10:05:30Z");
        assert_eq!(
            s.most_recent(ts("2026-01-01T10:00:00Z"), now),
            Some(ts("2026-01-01T10:05:00Z"))
        );
        assert_eq!(s.next(now), Some(ts("2026-01-01T10:06:00Z")));
        let s = Schedule::parse("15,45 */2 * * *", None).expect("parses");
        assert_eq!(s.next(now), Some(ts("2026-01-01T10:15:00Z")));
        assert_eq!(
            s.next(ts("2026-01-01T10:50:00Z")),
            Some(ts("2026-01-01T12:15:00Z"))
        );
        // Nothing due since the last schedule.
        assert_eq!(
            s.most_recent(ts("2026-01-01T10:15:00Z"), ts("2026-01-01T10:20:00Z")),
            None
        );
    }

    #[test]
    fn descriptors_names_and_time_zones() {
        let s = Schedule::parse("@hourly", None).expect("parses");
        assert_eq!(
            s.next(ts("2026-01-01T10:05:00Z")),
            Some(ts("2026-01-01T11:00:00Z"))
        );
        // 2026-01-01 is a Thursday.
        let s = Schedule::parse("0 9 * * MON-FRI", None).expect("parses");
        assert_eq!(
            s.next(ts("2026-01-02T10:00:00Z")),
            Some(ts("2026-01-05T09:00:00Z"))
        );
        let s = Schedule::parse("0 9 * * *", Some("Europe/Paris")).expect("parses");
        assert_eq!(
            s.next(ts("2026-01-01T00:00:00Z")),
            Some(ts("2026-01-01T08:00:00Z"))
        );
        let s = Schedule::parse("TZ=Asia/Tokyo 0 9 * * *", None).expect("parses");
        assert_eq!(
            s.next(ts("2026-01-01T00:00:00Z")),
            Some(ts("2026-01-02T00:00:00Z"))
        );
        assert!(Schedule::parse("* * *", None).is_none());
        assert!(Schedule::parse("61 * * * *", None).is_none());
    }

    #[test]
    fn job_is_named_after_the_scheduled_minute() {
        let cj = json!({"metadata": {"name": "c", "uid": "u"},
            "spec": {"jobTemplate": {"metadata": {"labels": {"x": "y"}}, "spec": {"template": {}}}}});
        let j = CronJobController::job_for(&cj, ts("2026-01-01T00:01:00Z"));
        assert_eq!(
            j["metadata"]["name"],
            format!("c-{}", ts("2026-01-01T00:01:00Z").as_second() / 60)
        );
        assert_eq!(j["metadata"]["labels"]["x"], "y");
        assert_eq!(j["metadata"]["labels"][LABEL], "cronjob");
        assert_eq!(j["metadata"]["ownerReferences"][0]["kind"], "CronJob");
        assert_eq!(
            j["metadata"]["annotations"][SCHEDULED_ANNOTATION],
            "2026-01-01T00:01:00Z"
        );
    }
}

//! Kubernetes resource quantities (`k8s.io/apimachinery/pkg/api/resource`):
//! syntax check and numeric value, for the registry's validation
//! (`requests <= limits`) and the federation's drift comparison (a member
//! writes `500m` for `0.5`). Canonical re-serialisation (`1024Mi` → `1Gi`)
//! is not done here.

/// The numeric value of a quantity (`500m` → 0.5, `1Ki` → 1024), or `None`
/// when it does not parse as kube-apiserver's `ParseQuantity` would.
pub fn parse(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let digits = num.trim_start_matches(['+', '-']);
    if digits.is_empty() || digits.matches('.').count() > 1 || num.len() - digits.len() > 1 {
        return None;
    }
    if digits == "." {
        return None;
    }
    let value: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => {
            let exp: i32 = e[1..].parse().ok()?;
            10f64.powi(exp)
        }
        _ => return None,
    };
    Some(value * mult)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn binary_and_decimal_suffixes_scale_the_number() {
        assert_eq!(parse("1Ki"), Some(1024.0));
        assert_eq!(parse("500m"), Some(0.5));
        assert_eq!(parse("2"), Some(2.0));
        assert_eq!(parse("1e3"), Some(1000.0));
    }

    #[test]
    fn garbage_is_not_a_quantity() {
        assert_eq!(parse("abc"), None);
        assert_eq!(parse("1Qi"), None);
        assert_eq!(parse(""), None);
    }
}

//! Service-account JWTs with kubectl 1.37, as kube-apiserver issues them:
//! `kubectl create token` (the TokenRequest subresource) returns a JWT that
//! authenticates as `system:serviceaccount:NS:NAME` until its account (or
//! the object it is bound to) is deleted; expired and wrong-audience tokens
//! are refused; the OIDC discovery documents are served and their JWKS
//! verifies the token (checked here with the jsonwebtoken crate, not with
//! the server's code).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use ubernetes_e2e::{Server, eventually, kubectl_bin};

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// A kubeconfig for the server with only `token` as credentials.
fn token_kubeconfig(server: &Server, dir: &Path, name: &str, token: &str) -> Result<PathBuf> {
    let field = |path: &str| {
        server.kubectl_ok(&[
            "config",
            "view",
            "--raw",
            "-o",
            &format!("jsonpath={{.clusters[0].cluster.{path}}}"),
        ])
    };
    let url = field("server")?;
    let ca = field("certificate-authority-data")?;
    let config = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority-data": ca}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "u"}}],
    });
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, serde_json::to_vec(&config)?)?;
    Ok(path)
}

fn kubectl_with(kubeconfig: &Path, args: &[&str]) -> Result<Output> {
    let cache = kubeconfig.with_extension("cache");
    Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("KUBECACHEDIR", cache)
        .env_remove("KUBECONFIG")
        .output()
        .context("running kubectl (set $KUBECTL)")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn payload(token: &str) -> Result<Value> {
    let part = token.split('.').nth(1).context("a JWT has a payload")?;
    Ok(serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part)?)?)
}

/// `kubectl auth whoami -o json` with `kubeconfig`: the user, or the error.
fn whoami(kubeconfig: &Path) -> Result<std::result::Result<Value, String>> {
    let out = kubectl_with(kubeconfig, &["auth", "whoami", "-o", "json"])?;
    if !out.status.success() {
        return Ok(Err(text(&out)));
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    Ok(Ok(v["status"]["userInfo"].clone()))
}

/// Wait until requests with `kubeconfig` are refused as unauthenticated.
fn until_unauthorized(kubeconfig: &Path) -> Result<String> {
    eventually(Duration::from_secs(10), || {
        Ok(match whoami(kubeconfig)? {
            Err(e) if e.contains("Unauthorized") || e.contains("must be logged in") => Some(e),
            _ => None,
        })
    })
}

#[test]
fn kubectl_create_token_gives_a_jwt_that_authenticates_until_its_account_is_deleted() -> Result<()>
{
    let server = Server::start()?;
    let dir = tempfile::tempdir()?;
    server.kubectl_ok(&["create", "namespace", "x"])?;
    // The namespace's default account is made by the server.
    eventually(Duration::from_secs(10), || {
        Ok(server
            .kubectl(&["get", "serviceaccount", "default", "-n", "x"])?
            .status
            .success()
            .then_some(()))
    })?;
    let token = server.kubectl_ok(&["create", "token", "default", "-n", "x"])?;
    let token = token.trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a compact JWT: {token}");
    let claims = payload(&token)?;
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["aud"], json!([ISSUER]));
    assert_eq!(claims["sub"], "system:serviceaccount:x:default");
    let lifetime = claims["exp"].as_i64().unwrap_or(0) - claims["iat"].as_i64().unwrap_or(0);
    assert_eq!(lifetime, 3600, "kube's default: one hour");
    let sa_uid = server.kubectl_ok(&[
        "get",
        "sa",
        "default",
        "-n",
        "x",
        "-o",
        "jsonpath={.metadata.uid}",
    ])?;
    assert_eq!(
        claims["kubernetes.io"],
        json!({"namespace": "x", "serviceaccount": {"name": "default", "uid": sa_uid}})
    );

    // Used as a bearer token: the account, in the service-account groups.
    let kubeconfig = token_kubeconfig(&server, dir.path(), "default", &token)?;
    let user = whoami(&kubeconfig)?.map_err(anyhow::Error::msg)?;
    assert_eq!(user["username"], "system:serviceaccount:x:default");
    assert_eq!(user["uid"], json!(sa_uid));
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:x",
            "system:authenticated"
        ])
    );
    let jti = claims["jti"].as_str().context("jti")?;
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={jti}")])
    );

    // The discovery documents, read as the account (kube's
    // system:service-account-issuer-discovery role), verify the token.
    let config: Value = serde_json::from_str(&text_ok(kubectl_with(
        &kubeconfig,
        &["get", "--raw", "/.well-known/openid-configuration"],
    )?)?)?;
    assert_eq!(config["issuer"], ISSUER);
    assert_eq!(config["response_types_supported"], json!(["id_token"]));
    assert_eq!(config["subject_types_supported"], json!(["public"]));
    let jwks_uri = config["jwks_uri"].as_str().context("jwks_uri")?;
    assert!(
        jwks_uri.starts_with("https://") && jwks_uri.ends_with("/openid/v1/jwks"),
        "{jwks_uri}"
    );
    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_str(&text_ok(kubectl_with(
        &kubeconfig,
        &["get", "--raw", "/openid/v1/jwks"],
    )?)?)?;
    let header = jsonwebtoken::decode_header(&token)?;
    let kid = header.kid.as_deref().context("kid")?;
    let jwk = jwks.find(kid).context("the token's key is in the JWKS")?;
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_audience(&[ISSUER]);
    validation.set_issuer(&[ISSUER]);
    let verified = jsonwebtoken::decode::<Value>(
        &token,
        &jsonwebtoken::DecodingKey::from_jwk(jwk)?,
        &validation,
    )
    .context("the JWKS verifies the token")?;
    assert_eq!(verified.claims["sub"], "system:serviceaccount:x:default");

    // A token for another audience is not one for this API; TokenReview
    // asking for that audience accepts it.
    let vault = server.kubectl_ok(&[
        "create",
        "token",
        "default",
        "-n",
        "x",
        "--audience=vault",
        "--duration=10m",
    ])?;
    let vault = vault.trim();
    assert_eq!(payload(vault)?["aud"], json!(["vault"]));
    let vault_config = token_kubeconfig(&server, dir.path(), "vault", vault)?;
    let refused = whoami(&vault_config)?.expect_err("wrong audience");
    assert!(refused.contains("Unauthorized"), "{refused}");
    let review = |token: &str, audiences: Value| -> Result<Value> {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                          "spec": {"token": token, "audiences": audiences}});
        let out =
            server.kubectl_stdin_ok(&["create", "-f", "-", "-o", "json"], &body.to_string())?;
        Ok(serde_json::from_str::<Value>(&out)?["status"].clone())
    };
    let reviewed = review(vault, json!(["vault"]))?;
    assert_eq!(reviewed["authenticated"], true);
    assert_eq!(reviewed["audiences"], json!(["vault"]));
    assert_eq!(
        reviewed["user"]["username"],
        "system:serviceaccount:x:default"
    );
    assert!(review(vault, json!([]))?["authenticated"].is_null());
    assert_eq!(review(&token, json!([]))?["authenticated"], true);

    // kube's validation of the lifetime.
    let err = server.kubectl_err(&["create", "token", "default", "-n", "x", "--duration=60s"])?;
    assert!(
        err.contains("spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"),
        "{err}"
    );

    // The account goes: the token is refused.
    server.kubectl_ok(&["delete", "serviceaccount", "default", "-n", "x"])?;
    let refused = until_unauthorized(&kubeconfig)?;
    assert!(refused.contains("Unauthorized"), "{refused}");
    Ok(())
}

fn text_ok(out: Output) -> Result<String> {
    if !out.status.success() {
        bail!("kubectl failed: {}", text(&out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_token_bound_to_a_secret_dies_with_it_and_an_expired_token_is_refused() -> Result<()> {
    let server = Server::start()?;
    let dir = tempfile::tempdir()?;
    server.kubectl_ok(&["create", "namespace", "y"])?;
    server.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "y"])?;
    server.kubectl_ok(&["create", "secret", "generic", "s1", "-n", "y"])?;
    let token = server.kubectl_ok(&[
        "create",
        "token",
        "robot",
        "-n",
        "y",
        "--bound-object-kind=Secret",
        "--bound-object-name=s1",
    ])?;
    let token = token.trim();
    let secret_uid = server.kubectl_ok(&[
        "get",
        "secret",
        "s1",
        "-n",
        "y",
        "-o",
        "jsonpath={.metadata.uid}",
    ])?;
    assert_eq!(
        payload(token)?["kubernetes.io"]["secret"],
        json!({"name": "s1", "uid": secret_uid})
    );
    let kubeconfig = token_kubeconfig(&server, dir.path(), "bound", token)?;
    let user = whoami(&kubeconfig)?.map_err(anyhow::Error::msg)?;
    assert_eq!(user["username"], "system:serviceaccount:y:robot");
    // kube refuses binding to other kinds.
    let err = server.kubectl_err(&[
        "create",
        "token",
        "robot",
        "-n",
        "y",
        "--bound-object-kind=Pod",
        "--bound-object-name=nope",
    ])?;
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
    server.kubectl_ok(&["delete", "secret", "s1", "-n", "y"])?;
    until_unauthorized(&kubeconfig)?;

    // A token of the right issuer, audience, account and key, expired two
    // minutes ago (signed here with the server's key from its data dir):
    // refused. The same token unexpired: accepted.
    let key = std::fs::read(server.data_dir().join("pki/sa.key"))?;
    let key = jsonwebtoken::EncodingKey::from_ec_pem(&key)?;
    let good = payload(&server.kubectl_ok(&["create", "token", "robot", "-n", "y"])?)?;
    let sign = |exp_offset: i64| -> Result<String> {
        let mut claims = good.clone();
        let iat = good["iat"].as_i64().context("iat")?;
        claims["iat"] = json!(iat - 4000);
        claims["nbf"] = json!(iat - 4000);
        claims["exp"] = json!(iat + exp_offset);
        Ok(jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
            &claims,
            &key,
        )?)
    };
    let fresh = token_kubeconfig(&server, dir.path(), "fresh", &sign(600)?)?;
    assert!(
        whoami(&fresh)?.is_ok(),
        "a token signed with sa.key is valid"
    );
    let expired = token_kubeconfig(&server, dir.path(), "expired", &sign(-120)?)?;
    let refused = whoami(&expired)?.expect_err("expired");
    assert!(refused.contains("Unauthorized"), "{refused}");
    Ok(())
}

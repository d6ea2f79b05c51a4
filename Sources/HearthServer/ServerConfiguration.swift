import HearthDocuments
public import HearthStorage
public import HearthAuth
public import HearthFiles

/// Everything `hearth serve` is configured with (flags > environment > firebase.json > defaults).
public struct ServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    /// Port per service name (`firestore`, later `auth`, `storage`, …); 0 = any free port.
    public var ports: [String: Int] = ["auth": 9099, "firestore": 8080, "storage": 9199, "s3": 9900, "database": 9000, "api": 8000]
    public var dataDirectory: String = "./hearth-data"
    public var project: String = "demo-hearth"
    public var emulator: Bool = false
    public var adminToken: String?
    public var strictIndexes: Bool = false
    public var readyFile: String?
    /// `firestore.indexes.json` (the Firebase CLI's format), applied to the (default) database.
    public var indexesFile: String?
    /// `firestore.rules`: security rules for Firestore, reloaded when the file changes.
    public var firestoreRulesFile: String?
    /// `storage.rules`: security rules for Storage, reloaded when the file changes.
    public var storageRulesFile: String?
    /// `database.rules.json`: Realtime Database rules for the default namespace, loaded at start.
    public var databaseRulesFile: String?

    /// Keep object bytes in an external S3 bucket instead of the data directory
    /// (`--blob-store s3://…`, or `--blob-s3`).
    public var blobS3: S3BlobStore.Configuration?
    /// `--database-url postgres://…`: documents, accounts, object metadata, the Realtime Database
    /// and App Check in PostgreSQL (docs/postgres.md); nil keeps them in the data directory's
    /// SQLite files. The composition root parses it (this module knows no backend).
    public var databaseURL: String?
    /// The auth engine's settings (password hashing, limits, email enumeration protection).
    public var auth: AuthEngine.Configuration = .init()
    /// OpenID Connect providers trusted by `accounts:signInWithIdp` (`--auth-config`).
    public var identityProviders: [IdentityProvider] = []
    /// Hosts email action links may name as `linkDomain` (`--auth-config` `linkDomains`).
    public var authLinkDomains: [String] = []
    /// Where the auth port's emails go (`--smtp-url`); nil keeps them in `<data-dir>/outbox/`.
    public var smtp: SMTPMailer?
    /// Errors logged since start, shown by the console (`RecentErrors.handler` in the logging bootstrap).
    public var recentErrors: RecentErrors?

    /// `--tls-cert`/`--tls-key`: TLS on every port (docs/production.md); nil = cleartext.
    public var tls: TLSFiles?
    /// `--shutdown-timeout`: how long SIGTERM/SIGINT waits for in-flight requests and open streams
    /// before cancelling them.
    public var shutdownTimeout: Duration = .seconds(10)
    /// `--trusted-proxy`: peers whose `X-Forwarded-Proto`/`-For` are believed.
    public var trustedProxies: [CIDR] = []

    /// The api port: the file registry (docs/app-backend.md).
    public var api: APIConfiguration = .init()
    /// The lifecycle worker's rules (`--lifecycle`); nil = no worker.
    public var lifecycle: LifecycleRules?
    /// `--max-request-bytes`, `--max-object-bytes`: how large a request each port accepts.
    public var limits: RequestLimits = .init()

    public init() {}

    /// Hearth's version, shown by `hearth --version` and the console.
    public static let version = "0.1.0-dev"

    /// `https` with TLS on, else `http`: the scheme of the URLs Hearth writes for its own ports.
    public var scheme: String { tls == nil ? "http" : "https" }

    /// The project's default bucket, created on first start.
    public var defaultBucket: String { "\(project).appspot.com" }

    /// DESIGN.md's default ports.
    public static let defaultPorts: [String: Int] = [
        "auth": 9099, "firestore": 8080, "database": 9000, "storage": 9199, "s3": 9900, "api": 8000, "console": 4000,
    ]
}

import Foundation
public import HearthCore
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
    /// `--public-url SERVICE=URL`: where clients reach a service when that is not this server's own
    /// host and port (a load balancer in front of several replicas, a reverse proxy): the console
    /// shows and links to these instead. Keys are service names (``publicServices``); values are
    /// `http(s)://host[:port][/path]` without a trailing slash.
    public var publicURLs: [String: String] = [:]
    /// `--replica-address`: the host name or address the other replicas over the same database
    /// reach this server's ports at (nil: ``host``, or this machine's host name when ``host`` is a
    /// wildcard address).
    public var replicaAddressSetting: String?
    /// Where the other replicas reach this server (``replicaAddressSetting``, else derived).
    public var replicaAddress: String {
        if let replicaAddressSetting, !replicaAddressSetting.isEmpty { return replicaAddressSetting }
        return listensOnEveryAddress ? ProcessInfo.processInfo.hostName : host
    }

    /// Whether ``host`` is a wildcard address (`0.0.0.0`, `::`): no one address names this server.
    public var listensOnEveryAddress: Bool { ["0.0.0.0", "::", "[::]", ""].contains(host) }

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

    /// The services a `--public-url` may name.
    public static let publicServices = ["firestore", "auth", "storage", "s3", "database", "api", "console", "metrics"]

    /// Parses `--public-url` entries (`SERVICE=URL`): the service one of ``publicServices``, named
    /// once; the URL absolute `http` or `https` with a host, and no query, fragment or user info.
    /// A trailing slash is dropped. Throws the reason for the first entry refused.
    public static func parsePublicURLs(_ entries: [String]) throws(HearthError) -> [String: String] {
        var out: [String: String] = [:]
        for entry in entries {
            guard let eq = entry.firstIndex(of: "=") else {
                throw HearthError.invalidArgument("\"\(entry)\" is not SERVICE=URL (e.g. firestore=https://firestore.example.com).")
            }
            let service = entry[..<eq].trimmingCharacters(in: .whitespaces).lowercased()
            var url = entry[entry.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            guard publicServices.contains(service) else {
                throw HearthError.invalidArgument("\"\(service)\" is not a service (one of \(publicServices.joined(separator: ", "))).")
            }
            guard out[service] == nil else { throw HearthError.invalidArgument("\(service) is given more than one public URL.") }
            guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let host = parts.host, !host.isEmpty
            else {
                throw HearthError.invalidArgument("\(service): \"\(url)\" is not an absolute http:// or https:// URL with a host.")
            }
            guard parts.query == nil, parts.fragment == nil, parts.user == nil, parts.password == nil else {
                throw HearthError.invalidArgument("\(service): \"\(url)\" may not carry a query, a fragment or user info.")
            }
            while url.hasSuffix("/") { url.removeLast() }
            out[service] = url
        }
        return out
    }

    /// The project's default bucket, created on first start.
    public var defaultBucket: String { "\(project).appspot.com" }

    /// DESIGN.md's default ports.
    public static let defaultPorts: [String: Int] = [
        "auth": 9099, "firestore": 8080, "database": 9000, "storage": 9199, "s3": 9900, "api": 8000, "console": 4000,
    ]
}

public import Foundation
import HearthCore
import HearthPostgres
public import HearthStorage

/// `--database-url`: a PostgreSQL database by libpq-style URL (docs/postgres.md, "Serving from
/// PostgreSQL"). The CLI resolves the text (flag, `HEARTH_DATABASE_URL`, firebase.json's
/// `hearth.databaseUrl`); this reads and shows it.
public enum DatabaseURL {
    /// Checks `text` is a database URL Hearth can use and returns where it points
    /// (`postgres://user@host:port/database`, no password); INVALID_ARGUMENT naming the wrong part otherwise.
    @discardableResult
    public static func validate(_ text: String) throws -> String {
        try settings(text).description
    }

    static func settings(_ text: String) throws -> PostgresSettings {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw HearthError.invalidArgument("The database URL is empty: postgres://user:password@host:port/database.")
        }
        let settings = try PostgresSettings(url: text)
        if let database = settings.database, database.contains("/") {
            throw HearthError.invalidArgument("The database URL names the database \"\(database)\": a name has no \"/\".")
        }
        return settings
    }

    /// `text` as `--print-config` and logs show it: the password (in the user part or a
    /// `password=` query item) replaced by `REDACTED`. Text that is not a URL is shown as
    /// `(set, redacted)` (it might hold a password in a shape we do not know).
    public static func redacted(_ text: String) -> String {
        guard var parts = URLComponents(string: text), parts.scheme != nil, parts.host != nil else { return "(set, redacted)" }
        if parts.password != nil { parts.password = "REDACTED" }
        if let items = parts.queryItems, items.contains(where: { $0.name.lowercased() == "password" }) {
            parts.queryItems = items.map { $0.name.lowercased() == "password" ? URLQueryItem(name: $0.name, value: "REDACTED") : $0 }
        }
        return parts.string ?? "(set, redacted)"
    }
}

/// Where object bytes live: `--blob-store` (`file`, the default, or
/// `s3://BUCKET?endpoint=URL&prefix=P&region=R`) and the older `--blob-s3 http(s)://HOST[:PORT]/BUCKET[/PREFIX]`,
/// read by one parser into one ``S3BlobStore/Configuration``.
public enum BlobStoreLocation: Sendable, Equatable {
    /// Files under the data directory's `objects/`.
    case files
    /// An external S3 bucket (path-style requests to `endpoint`); `region` when the spec names one.
    case s3(endpoint: URL, bucket: String, prefix: String, region: String?)

    /// Reads a spec (nil or `file`: ``files``). INVALID_ARGUMENT, naming what is wrong, otherwise.
    public init(_ spec: String?) throws {
        guard let spec, spec != "file" else {
            self = .files
            return
        }
        guard let url = URLComponents(string: spec), let scheme = url.scheme?.lowercased() else {
            throw HearthError.invalidArgument("A blob store is file or s3://BUCKET?endpoint=URL (got \"\(spec)\").")
        }
        switch scheme {
        case "s3":
            guard let bucket = url.host, !bucket.isEmpty else {
                throw HearthError.invalidArgument("A blob store s3:// URL names its bucket: s3://BUCKET?endpoint=https://host:port.")
            }
            var items: [String: String] = [:]
            for item in url.queryItems ?? [] {
                guard ["endpoint", "prefix", "region"].contains(item.name) else {
                    throw HearthError.invalidArgument("Unknown \"\(item.name)\" in the blob store URL (endpoint, prefix or region).")
                }
                items[item.name] = item.value ?? ""
            }
            var prefix = items["prefix"] ?? ""
            // s3://bucket/some/prefix says the same as ?prefix=some/prefix.
            let pathPrefix = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
            if !pathPrefix.isEmpty {
                guard prefix.isEmpty else { throw HearthError.invalidArgument("The blob store URL gives its prefix twice (path and ?prefix=).") }
                prefix = pathPrefix
            }
            let region = items["region"].flatMap { $0.isEmpty ? nil : $0 }
            let endpoint: URL
            if let text = items["endpoint"] {
                guard let parsed = URLComponents(string: text), let endpointScheme = parsed.scheme?.lowercased(),
                    ["http", "https"].contains(endpointScheme), let host = parsed.host, !host.isEmpty, parsed.path.isEmpty || parsed.path == "/",
                    parsed.query == nil
                else {
                    throw HearthError.invalidArgument("The blob store's endpoint must be http(s)://HOST[:PORT] (got \"\(text)\").")
                }
                var plain = URLComponents()
                plain.scheme = endpointScheme
                plain.host = host
                plain.port = parsed.port
                endpoint = plain.url!
            } else {
                // AWS itself: the regional endpoint, path-style.
                endpoint = URL(string: "https://s3.\(region ?? "us-east-1").amazonaws.com")!
            }
            self = .s3(endpoint: endpoint, bucket: bucket, prefix: Self.directoryPrefix(prefix), region: region)
        case "http", "https":
            guard let host = url.host, !host.isEmpty else {
                throw HearthError.invalidArgument("--blob-s3 must look like https://s3.example.com/bucket/prefix")
            }
            let parts = url.path.split(separator: "/", maxSplits: 1).map(String.init)
            guard let bucket = parts.first else { throw HearthError.invalidArgument("--blob-s3 must name a bucket: https://host/bucket[/prefix]") }
            var endpoint = URLComponents()
            endpoint.scheme = scheme
            endpoint.host = host
            endpoint.port = url.port
            self = .s3(endpoint: endpoint.url!, bucket: bucket, prefix: Self.directoryPrefix(parts.count > 1 ? parts[1] : ""), region: nil)
        default:
            throw HearthError.invalidArgument("A blob store is file or s3://BUCKET?endpoint=URL (got \"\(spec)\").")
        }
    }

    /// A non-empty prefix ends with `/`.
    static func directoryPrefix(_ prefix: String) -> String {
        prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
    }

    /// The S3 blob store's configuration (nil for ``files``): the spec's region, else `defaultRegion`.
    public func configuration(defaultRegion: String, accessKeyID: String, secretAccessKey: String) -> S3BlobStore.Configuration? {
        guard case .s3(let endpoint, let bucket, let prefix, let region) = self else { return nil }
        return .init(
            endpoint: endpoint, region: region ?? defaultRegion, bucket: bucket, prefix: prefix, accessKeyID: accessKeyID,
            secretAccessKey: secretAccessKey)
    }
}

/// `<data-dir>/postgres-database`: a server started with a database URL writes it there (the
/// whole URL, readable only by its owner, as the admin token beside it), so that
/// - nothing mistakes the data directory's SQLite files — empty, or left from before — for the
///   server's data: `hearth serve` without the URL refuses the directory, and so do the offline
///   commands that copy those files (`backup`, `restore`, `export`, `import`:
///   ``refusal(dataDirectory:command:configured:)``);
/// - `hearth admin …` and `hearth lifecycle plan` run on the data directory reach the server's
///   database (``url(_:)``).
public enum PostgresMarker {
    public static let fileName = "postgres-database"

    static func write(_ dataDirectory: URL, url: String) throws {
        let file = dataDirectory.appendingPathComponent(fileName)
        let text = url + "\n"
        guard (try? String(contentsOf: file, encoding: .utf8)) != text else { return }
        let temporary = dataDirectory.appendingPathComponent(".\(fileName).\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]),
            rename(temporary.path, file.path) == 0
        else {
            try? FileManager.default.removeItem(at: temporary)
            throw HearthError(.failedPrecondition, "Cannot write \(file.path) (errno \(errno)).")
        }
    }

    /// The database URL a server of `dataDirectory` used, if one did.
    public static func url(_ dataDirectory: URL) -> String? {
        guard let data = FileManager.default.contents(atPath: dataDirectory.appendingPathComponent(fileName).path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// ``url(_:)`` as messages show it (password redacted).
    public static func recorded(_ dataDirectory: URL) -> String? {
        url(dataDirectory).map(DatabaseURL.redacted)
    }

    /// Why `command`, which works on the SQLite files of `dataDirectory`, must not run: a database
    /// URL is configured (`configured`: where from, e.g. "env HEARTH_DATABASE_URL"), or the data
    /// directory belongs to a server that keeps its data in PostgreSQL. nil when it may run.
    public static func refusal(dataDirectory: URL, command: String, configured: String?) -> String? {
        let because: String
        if let configured {
            because = "a database URL is set (\(configured))"
        } else if let recorded = recorded(dataDirectory) {
            because = "\(dataDirectory.path) belongs to a server that keeps its data in PostgreSQL (\(recorded); its \(fileName) file says so)"
        } else {
            return nil
        }
        return "\(command) works on the SQLite files of a data directory, but \(because). It does not work over PostgreSQL yet: "
            + "use the database's own tools (pg_dump, pg_restore) and the server's APIs instead (docs/postgres.md, \"Serving from PostgreSQL\")."
    }
}

import HearthCore
import PostgresNIO
import Foundation

/// Where a PostgreSQL database is and how to reach it, read from a URL as libpq writes them:
/// `postgres://user:password@host:port/database?sslmode=disable|prefer|require`
/// (`postgresql://` too; the port defaults to 5432, the user to `postgres`, sslmode to `prefer`).
/// A `host` query item that starts with `/` selects a unix-socket directory instead of TCP.
public struct PostgresSettings: Sendable, CustomStringConvertible {
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    public var host: String
    public var port: Int
    /// A unix-socket directory (libpq's `host=/dir`); when set, `host`/`port` name the socket file.
    public var socketDirectory: String?
    public var username: String
    public var password: String?
    public var database: String?
    public var tls: TLSMode
    /// Connections the pool keeps at most.
    public var maximumConnections: Int = 16
    /// How long an idle connection above the minimum stays open.
    public var connectionIdleTimeout: Duration = .seconds(60)
    /// How long a request waits for a connection before it is answered UNAVAILABLE (the pool
    /// itself would queue it while the database is down for up to a minute).
    public var acquireTimeout: Duration = .seconds(5)
    /// How long opening a connection may take.
    public var connectTimeout: Duration = .seconds(5)

    public init(
        host: String, port: Int = 5432, socketDirectory: String? = nil, username: String = "postgres", password: String? = nil,
        database: String? = nil, tls: TLSMode = .prefer
    ) {
        self.host = host
        self.port = port
        self.socketDirectory = socketDirectory
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Parses a `postgres://` URL; INVALID_ARGUMENT (naming the part that is wrong) otherwise.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw HearthError.invalidArgument("A database URL must look like postgres://user:password@host:port/database.")
        }
        var items: [String: String] = [:]
        for item in components.queryItems ?? [] { items[item.name] = item.value ?? "" }
        let path = components.percentEncodedPath.hasPrefix("/") ? String(components.percentEncodedPath.dropFirst()) : components.percentEncodedPath
        let database = path.removingPercentEncoding ?? path
        self.init(
            host: components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost", port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? "postgres", password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database)
        if let socket = items["host"], socket.hasPrefix("/") { socketDirectory = socket }
        if let mode = items["sslmode"] {
            switch mode {
            case "disable": tls = .disable
            case "allow", "prefer": tls = .prefer
            case "require", "verify-ca", "verify-full": tls = .require
            default: throw HearthError.invalidArgument("Unknown sslmode \"\(mode)\" in the database URL (disable, prefer or require).")
            }
        }
    }

    /// `host:port` (or the socket path), for errors and logs — never the password.
    public var endpoint: String {
        if let socketDirectory { return "\(socketDirectory)/.s.PGSQL.\(port)" }
        return "\(host):\(port)"
    }

    /// The URL without its password.
    public var description: String {
        "postgres://\(username)@\(endpoint)/\(database ?? "")"
    }

    var clientConfiguration: PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            configuration = .init(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password, database: database)
        } else {
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: clientTLS)
        }
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectionIdleTimeout = connectionIdleTimeout
        configuration.options.connectTimeout = connectTimeout
        return configuration
    }

    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socketDirectory {
            configuration = .init(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password, database: database)
        } else {
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: try connectionTLS())
        }
        configuration.options.connectTimeout = .init(connectTimeout)
        return configuration
    }

    private var clientTLS: PostgresClient.Configuration.TLS {
        switch tls {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

    private func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
        switch tls {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }
}

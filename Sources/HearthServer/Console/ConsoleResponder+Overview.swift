import HearthCore
import HearthStorage
import Hummingbird
import Foundation

/// `GET /api/overview`: services and ports, version, where the data lives, counts, recent errors.
extension ConsoleResponder {
    /// Counting stops here; the console shows "100,000+" beyond.
    static let countCap = 100_000

    func overview(_ request: Request) async throws -> Response {
        let protocols: [(String, String)] = [
            ("firestore", "Firestore v1 gRPC + REST"), ("auth", "Identity Toolkit + Secure Token REST"),
            ("database", "Realtime Database REST, SSE, WebSocket"), ("storage", "Firebase Storage v0 + GCS JSON"),
            ("s3", "S3 REST (SigV4)"), ("api", "Hearth app API"), ("console", "this console"),
        ]
        var services: [JSON] = []
        for (name, proto) in protocols {
            let port = boundPort(name)
            if port == nil && name != "database" && name != "api" { continue }
            let reachedAt: JSON = port == nil ? .null : configuration.publicURLs[name].map { .string($0) } ?? .null
            services.append(.object([
                ("name", .string(name)), ("port", port.map { .number($0) } ?? .null), ("protocol", .string(proto)), ("publicURL", reachedAt),
            ]))
        }
        async let documents = countDocuments()
        async let users = countUsers()
        async let objectCount = countObjects()
        let counts = JSON.object([("documents", try await documents), ("users", try await users), ("objects", try await objectCount)])
        let errors: [JSON] = (recentErrors?.all ?? []).map { e in
            .object([
                ("time", .string(Self.rfc3339(e.time))), ("message", .string(e.message)), ("label", .string(e.label)),
                ("metadata", .object(e.metadata.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ])
        }
        // Prometheus text: a metrics port of its own when there is one, else the api port's /metrics.
        // Behind a load balancer, the public URL of that port.
        let metricsURL: JSON = (boundPort("metrics") != nil ? publicURL("metrics", request) : publicURL("api", request))
            .map { .string($0 + "/metrics") } ?? .null
        return HTTPSupport.json(.object([
            ("version", .string(ServerConfiguration.version)), ("project", .string(configuration.project)),
            ("emulator", .bool(configuration.emulator)),
            ("dataDirectory", .string(URL(fileURLWithPath: configuration.dataDirectory).standardizedFileURL.path)),
            ("startedAt", .string(Self.rfc3339(startedAt))), ("services", .array(services)), ("counts", counts),
            ("recentErrors", .array(errors)), ("metricsURL", metricsURL),
        ]))
    }

    static func rfc3339(_ date: Date) -> String {
        Timestamp(microseconds: Int64(date.timeIntervalSince1970 * 1_000_000)).rfc3339
    }

    static func count(_ n: Int) -> JSON {
        .object([("value", .number(min(n, countCap))), ("capped", .bool(n >= countCap))])
    }

    func countDocuments() async throws -> JSON {
        Self.count(try await engine.countDocuments(database: defaultDatabase.database, upTo: Self.countCap))
    }

    func countUsers() async throws -> JSON {
        var total = 0
        var token: String?
        repeat {
            let page = try await auth.listAccounts(maxResults: 1000, pageToken: token)
            total += page.accounts.count
            token = page.accounts.isEmpty ? nil : page.nextPageToken
        } while token != nil && total < Self.countCap
        return Self.count(total)
    }

    func countObjects() async throws -> JSON {
        var total = 0
        for bucket in try await objects.buckets() {
            var after: String?
            repeat {
                let page = try await objects.list(bucket.name, .init(after: after, maxResults: 1000))
                total += page.objects.count
                after = page.next
            } while after != nil && total < Self.countCap
        }
        return Self.count(total)
    }
}

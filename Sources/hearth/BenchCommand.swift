import ArgumentParser
import Foundation
import HearthBench

/// `hearth bench`: the command's arguments; the load generators and their same-run baselines
/// are in the HearthBench module (``Bench``).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Hearth's throughput and latency next to same-run baselines.",
        discussion: """
            Phases: http (baseline: a minimal Hummingbird route), grdb (baselines: raw GRDB inserts \
            of the same bytes with the same durability, one transaction each and 64 per transaction, \
            and raw point selects), rules (one rules evaluation, no I/O: owner check, a get(), a list query, \
            next to `allow read: if true`), engine (the document engine's commits and gets without HTTP), transactions \
            (read-write transactions on the engine — get and commit of an increment, retried on ABORTED — each client on \
            its own document and all on one document, next to plain commits), listen (realtime listeners on the engine: \
            commit-to-listener latency with 1, 1,000 and 10,000 Listen streams next to the commit alone, one write \
            to 1,000 listeners of a document, memory per idle stream), listen-grpc (the same latency with 1, 1,000 and \
            10,000 Listen streams over gRPC on the Firestore port, held from an in-process HTTP/2 client), auth-verify, auth-signin, \
            auth-refresh, auth-signup (in-process auth engine next to RS256, scrypt and GRDB baselines; `auth` selects all four), write (single-document writes over REST), write-wrk (REST creates from wrk with --clients connections \
            against Hearth and Google's Firestore emulator when installed, next to raw GRDB single-row commits; needs wrk), rules-write (a signed-in user's writes over \
            REST without rules and with an owner-check rule, same server, same run), read (point gets over \
            REST), grpc (single-document Commit and GetDocument over gRPC/h2c on the Firestore port, next to \
            the same REST write and get in the same run; --grpc-connections HTTP/2 connections carry the \
            clients' streams), query (a 20-document query page from collections of --small and --large documents), \
            storage (100 MiB through Firebase Storage v0 and S3 next to a same-run disk copy, taking \
            turns with it, and to MD5 of the same bytes on one core, with each upload's share of the \
            disk-copy rate and its CPU time; 4 KiB S3 \
            PUT/GET with 32 clients, and 4 KiB GETs through presigned URLs from wrk, next to the bare \
            HTTP stack under wrk, when wrk is installed), database (the Realtime Database: REST PUTs to distinct \
            paths and to one hot path next to Firestore REST creates, a write reaching 1,000 SSE listeners next to its \
            own acknowledgement, a GET of a 10k-child subtree next to the same JSON from a bare route, and an orderBy-child \
            limitToFirst=10 query over 100k children from its .indexOn index next to an unindexed scan), \
            import (not in the default set: `hearth import` of a Firestore export of --import-documents documents, \
            written here, with wall time, docs/s and peak RSS, next to the engine path and the bulk path on \
            --import-baseline documents, and Google's Firestore emulator loading the same export when installed). \
            sdk (not in the default set: the Swift client SDK over gRPC — listener latency from another app's write next to \
            Python's google-cloud-firestore in the same run (--python), the first snapshot from a 10k-document cache next to \
            the same listener without a cache, 1,000 writes queued offline drained next to Python writing them one at a time). \
            engine-postgres (not in the default set: the document engine's commits, hot-document increments and point reads on \
            PostgreSQL next to the same on SQLite in the same run; the database from HEARTH_BENCH_POSTGRES_URL, e.g. \
            postgres://postgres@127.0.0.1:5432/postgres; its tables are created by the schema migrations). \
            replicas (not in the default set: REST writes and point reads from wrk, --connections spread round-robin over \
            --replicas real `hearth serve --database-url` processes on one PostgreSQL database — a fresh one per configuration, \
            created from HEARTH_BENCH_POSTGRES_URL and dropped — next to one `hearth serve` on SQLite in the same run, with each \
            process's CPU, PostgreSQL's backends' included, and the database's write transactions/s; skipped without the URL). \
            Clients run in this process against an in-process server on 127.0.0.1, except wrk, the sdk phase's Python baseline and, with --database-target, the database fan-out.
            """
    )

    @Option(help: "Concurrent clients.") var clients = 64
    @Option(help: "Seconds per measured phase.") var duration = 5.0
    @Option(help: "Documents in the small query collection.") var small = 10_000
    @Option(help: "Documents in the large query collection (0 skips it).") var large = 1_000_000
    @Option(help: "Comma-separated phases to run: http,grdb,rules,engine,transactions,listen,listen-grpc,auth (= auth-verify,auth-signin,auth-refresh,auth-signup),write,write-wrk,rules-write,read,grpc,query,storage,api,lifecycle,console,database (= database-write,database-fanout,database-read),database-ws,database-ws-fanout (only the WebSocket fan-out),import,sdk,engine-postgres,replicas.")
    var phases = "http,grdb,rules,engine,transactions,listen,listen-grpc,auth,write,write-wrk,rules-write,read,grpc,query,storage"
    @Option(name: .customLong("import-documents"), help: "Documents in the import phase's export.")
    var importDocuments = 1_000_000
    @Option(name: .customLong("import-baseline"), help: "Documents in the import phase's same-run baselines (engine path and bulk path).")
    var importBaseline = 20_000
    @Option(name: .customLong("grpc-connections"), help: "HTTP/2 connections the grpc phase's clients share.")
    var grpcConnections = 4
    @Option(help: "The Python (with google-cloud-firestore) for the sdk phase's baseline; default $HEARTH_BENCH_PYTHON, else python3.")
    var python = ProcessInfo.processInfo.environment["HEARTH_BENCH_PYTHON"] ?? "python3"
    @Option(name: .customLong("sdk-client"), help: ArgumentHelp("Internal (the sdk phase): run its listener-latency clients against this Firestore port and print JSON.", visibility: .hidden))
    var sdkClient: Int?
    @Option(help: "The replicas phase: how many `hearth serve` processes share the PostgreSQL database, one configuration per count.")
    var replicas = "1,2,3"
    @Option(help: "The replicas phase: wrk's HTTP/1.1 connections, spread over the servers.")
    var connections = 16
    @Option(name: .customLong("data-dir"), help: "Where to keep the benchmark's data (default: a new temporary directory).")
    var dataDir: String?

    @Option(name: .customLong("database-target"), help: "Run only the Realtime Database fan-out phases (database-fanout, database-ws-fanout) against a running `hearth serve --emulator` at this host:port (its database port): the listeners in this process, the server in its own.")
    var databaseTarget: String?

    @Option(name: .customLong("serve-broadcast"), help: "Serve the database-fanout ceiling (a bare Hummingbird event-stream broadcast, no database) on this port until interrupted, for --database-target; runs no phase.")
    var serveBroadcast: Int?

    func validate() throws {
        let counts = replicas.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) >= 1 }) else {
            throw ValidationError("--replicas takes counts of servers, at least 1 each, separated by commas (e.g. 1,2,3)")
        }
        guard connections >= counts.compactMap({ $0 }).max() ?? 1 else {
            throw ValidationError("--connections must be at least the largest count in --replicas (each server gets one connection at least)")
        }
    }

    func run() async throws {
        try await Bench(
            clients: clients, duration: duration, small: small, large: large, phases: phases, importDocuments: importDocuments,
            importBaseline: importBaseline, grpcConnections: grpcConnections, dataDir: dataDir, databaseTarget: databaseTarget,
            serveBroadcast: serveBroadcast, python: python, sdkClient: sdkClient,
            replicas: replicas.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }, connections: connections
        ).run()
    }
}

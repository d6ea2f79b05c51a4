// swift-tools-version:6.1
import PackageDescription

// One settings array for every target (grpc-swift-2 style): Swift 6 mode, strict existentials.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hearth", targets: ["hearth"]),
        .library(name: "HearthCore", targets: ["HearthCore"]),
        .library(name: "HearthRules", targets: ["HearthRules"]),
        .library(name: "HearthAuth", targets: ["HearthAuth"]),
        .library(name: "HearthJWT", targets: ["HearthJWT"]),
        .library(name: "HearthDocuments", targets: ["HearthDocuments"]),
        .library(name: "HearthDatabase", targets: ["HearthDatabase"]),
        .library(name: "HearthSQLite", targets: ["HearthSQLite"]),
        .library(name: "HearthPostgres", targets: ["HearthPostgres"]),
        .library(name: "HearthServer", targets: ["HearthServer"]),
        .library(name: "HearthApp", targets: ["HearthApp"]),
        .library(name: "HearthStorage", targets: ["HearthStorage"]),
        .library(name: "HearthFiles", targets: ["HearthFiles"]),
        .library(name: "HearthAppCheck", targets: ["HearthAppCheck"]),
        .library(name: "HearthTesting", targets: ["HearthTesting"]),
        .library(name: "HearthTokenVerifier", targets: ["HearthTokenVerifier"]),
        .library(name: "HearthTokenVerifierHummingbird", targets: ["HearthTokenVerifierHummingbird"]),
        .library(name: "HearthFirestoreProto", targets: ["HearthFirestoreProto"]),
        // The client SDK (Firebase's programming model for Swift apps on Apple platforms and Linux): one import for every service.
        .library(name: "HearthClient", targets: ["HearthClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/grpc/grpc-swift-2.git", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
    ],
    targets: [
        // Values, paths, ordering, limits, errors, JSON — no I/O.
        .target(name: "HearthCore", swiftSettings: swiftSettings),
        // Fuzz targets for the parsers of untrusted text in HearthCore (scripts/fuzz runs them under
        // libFuzzer; HearthCoreTests replays the kept inputs).
        .target(name: "HearthFuzzTargets", dependencies: ["HearthCore", "HearthRules"], swiftSettings: swiftSettings),
        // libFuzzer front end (built with -sanitize=fuzzer by scripts/fuzz); otherwise replays inputs.
        .executableTarget(name: "hearth-fuzz", dependencies: ["HearthFuzzTargets"], swiftSettings: swiftSettings),
        // The security-rules language: lexer, parser, evaluator — no I/O.
        .target(
            name: "HearthRules", dependencies: ["HearthCore", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: swiftSettings),
        // JWTs: the one parser, RS256 signer and verifier, time checks, and the JWKS / x509 key-set
        // reader and writer, for Auth, App Check, the token-verifier library and the client SDK.
        .target(
            name: "HearthJWT",
            dependencies: [
                "HearthCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        // Accounts, password hashing, tokens — no HTTP.
        .target(
            name: "HearthAuth",
            dependencies: [
                "HearthCore", "HearthJWT",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The document engine: writes, transforms, queries, transactions, indexes.
        .target(
            name: "HearthDocuments",
            dependencies: ["HearthCore", .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics")],
            swiftSettings: swiftSettings
        ),
        // The Realtime Database engine: JSON trees, limits, push ids, queries, the change feed — no HTTP, no SQL.
        .target(
            name: "HearthDatabase",
            dependencies: ["HearthCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // Embedded persistence behind the engines' protocols (documents, accounts, object metadata and S3 keys, App Check,
        // the Realtime Database tree), and online backups and restores of a data directory: the only module with GRDB
        // among the engines' backends.
        .target(
            name: "HearthSQLite",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthAuth", "HearthDatabase", "HearthStorage", "HearthAppCheck",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the bulk loader's directly bound statements.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // The store conformance suites (one per engine protocol), run by the test targets against every backend:
        // in-memory, SQLite, PostgreSQL. Used only by test targets.
        .target(
            name: "HearthStoreConformance",
            dependencies: ["HearthCore", "HearthDocuments", "HearthAuth", "HearthDatabase", "HearthStorage", "HearthAppCheck"],
            path: "Sources/HearthStoreConformance",
            swiftSettings: swiftSettings
        ),
        // Shared persistence on PostgreSQL behind the engines' protocols (Firestore documents, object metadata and S3 keys, App Check,
        // the Realtime Database tree, accounts): one connection pool, versioned migrations under an advisory lock. The only module with
        // postgres-nio.
        .target(
            name: "HearthPostgres",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthDatabase", "HearthStorage", "HearthAppCheck", "HearthAuth",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // ConnectionPoolError, which PostgresClient throws as is when no connection can be leased.
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // C shims for HearthStorage: hardware CRC-32C behind a runtime CPU check, early writeback. No dependencies.
        .target(name: "HearthCShims"),
        // Objects and buckets: metadata behind its ObjectMetadataStore protocol, bytes in a blob store — no HTTP, no SQL.
        .target(
            name: "HearthStorage",
            dependencies: [
                "HearthCore", "HearthCShims",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // The blob reclaimer runs as a Service of the server's ServiceGroup.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The app backend's file registry (presigned uploads, `files/{fileId}` records, expiry) — no HTTP.
        .target(
            name: "HearthFiles",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // App Check: tokens issued (debug and custom-token exchanges), verified, consumed — no HTTP.
        .target(
            name: "HearthAppCheck",
            dependencies: [
                "HearthCore", "HearthAuth", "HearthJWT",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // Transports only: Firestore (REST and gRPC), Auth, Storage, S3, the Realtime Database (REST and WebSocket), the api
        // and console ports over Hummingbird, with TLS; no store, no SQL (the composition root, HearthApp, hands it the engines).
        .target(
            name: "HearthServer",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthRules", "HearthAuth", "HearthStorage",
                "HearthDatabase", "HearthFiles", "HearthAppCheck", "HearthTesting", "HearthJWT",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                "HearthFirestoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // The web console's pages, compiled into the binary (no npm, no CDN, no files beside it).
            resources: [
                .embedInCode("Console/Assets/index.html"),
                .embedInCode("Console/Assets/console.css"),
                .embedInCode("Console/Assets/console.js"),
                .embedInCode("Console/Assets/api.js"),
                .embedInCode("Console/Assets/dom.js"),
                .embedInCode("Console/Assets/values.js"),
                .embedInCode("Console/Assets/page-overview.js"),
                .embedInCode("Console/Assets/page-firestore.js"),
                .embedInCode("Console/Assets/page-database.js"),
                .embedInCode("Console/Assets/page-auth.js"),
                .embedInCode("Console/Assets/page-storage.js"),
                .embedInCode("Console/Assets/page-rules.js"),
            ],
            swiftSettings: swiftSettings
        ),
        // The composition root: reads the configuration, opens the stores of one storage backend (SQLite or PostgreSQL),
        // builds the engines and hands them to HearthServer; the Emulator Suite export and import of a data directory.
        .target(
            name: "HearthApp",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthAuth", "HearthStorage", "HearthDatabase", "HearthAppCheck", "HearthSQLite",
                "HearthPostgres", "HearthServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Helpers for users' own tests: rules test beds, cases files (`hearth rules test`).
        .target(name: "HearthTesting", dependencies: ["HearthCore", "HearthRules"], swiftSettings: swiftSettings),
        // ID-token verification for users' own Swift servers (JWKS / x509 URLs, key rotation).
        .target(
            name: "HearthTokenVerifier",
            dependencies: [
                "HearthCore", "HearthJWT",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The verifier as Hummingbird middleware.
        .target(
            name: "HearthTokenVerifierHummingbird",
            dependencies: ["HearthTokenVerifier", "HearthCore", .product(name: "Hummingbird", package: "hummingbird")],
            swiftSettings: swiftSettings
        ),
        // Generated swift-protobuf messages and grpc-swift-2 stubs for google.firestore.v1 (+ google.type.LatLng,
        // google.rpc.Status); regenerate with scripts/generate-firestore-protos, never edit by hand.
        .target(
            name: "HearthFirestoreProto",
            dependencies: [
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
            ],
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // The client SDK. It shares no server code (only HearthCore's values and HearthJWT, which every JWT reader uses): HearthClientCore (apps, options, HTTP), one module per service
        // behind the umbrella HearthClient, so an app using only Auth builds only Auth.
        .target(
            name: "HearthClientCore",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Decodes ID-token claims with HearthJWT's parser (the one JWT parser; no server code).
        .target(name: "HearthClientAuth", dependencies: ["HearthClientCore", "HearthCore", "HearthJWT"], swiftSettings: swiftSettings),
        .target(name: "HearthClientStorage", dependencies: ["HearthClientCore", "HearthClientAuth"], swiftSettings: swiftSettings),
        .target(
            name: "HearthClientFirestore",
            dependencies: [
                "HearthClientCore", "HearthClientAuth", "HearthFirestoreProto",
                // The offline cache (documents, targets, the write queue) in SQLite.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ],
            swiftSettings: swiftSettings),
        .target(
            name: "HearthClientDatabase",
            dependencies: [
                "HearthClientCore", "HearthClientAuth",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .target(
            name: "HearthClient",
            dependencies: ["HearthClientCore", "HearthClientAuth", "HearthClientStorage", "HearthClientFirestore", "HearthClientDatabase"],
            swiftSettings: swiftSettings),
        // The MakeItSo task app's flow on Linux, written against HearthClient (run by tests/conformance/test_makeitso_example.py).
        .executableTarget(name: "makeitso-cli", dependencies: ["HearthClient"], path: "examples/makeitso-cli/Sources/MakeItSo", swiftSettings: swiftSettings),
        // `hearth bench`'s load generators and their same-run baselines (the CLI keeps only the command's arguments).
        .target(
            name: "HearthBench",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthApp", "HearthServer", "HearthRules", "HearthAuth", "HearthDatabase", "HearthFiles",
                "HearthFirestoreProto", "HearthSQLite", "HearthPostgres", "HearthStorage", "HearthTokenVerifier",
                // The sdk bench phase drives the client SDK against the bench's server.
                "HearthClientCore", "HearthClientFirestore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "hearth",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthSQLite", "HearthServer", "HearthApp", "HearthBench", "HearthStorage", "HearthRules",
                "HearthTesting", "HearthAuth", "HearthAppCheck", "HearthFiles",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthCoreTests", dependencies: ["HearthCore", "HearthFuzzTargets"], resources: [.copy("FuzzCorpus")],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthTokenVerifierTests",
            dependencies: [
                "HearthTokenVerifier", "HearthTokenVerifierHummingbird", "HearthAuth", "HearthCore", "HearthJWT",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthJWTTests",
            dependencies: [
                "HearthJWT", "HearthCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthAuthTests",
            dependencies: [
                "HearthAuth", "HearthCore", "HearthSQLite", "HearthJWT", "HearthStoreConformance",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthStorageTests",
            dependencies: [
                "HearthStorage", "HearthCore", "HearthSQLite", "HearthStoreConformance", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthFilesTests",
            dependencies: ["HearthFiles", "HearthCore", "HearthDocuments", "HearthSQLite", "HearthStorage"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthAppCheckTests",
            dependencies: [
                "HearthAppCheck", "HearthAuth", "HearthCore", "HearthJWT", "HearthSQLite", "HearthStoreConformance",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthRulesTests", dependencies: ["HearthRules", "HearthCore"],
            resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthTestingTests", dependencies: ["HearthTesting", "HearthRules", "HearthCore"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthDocumentsTests",
            dependencies: ["HearthCore", "HearthDocuments", "HearthSQLite", "HearthStoreConformance"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthDatabaseTests",
            dependencies: ["HearthCore", "HearthDatabase", "HearthSQLite", "HearthStoreConformance"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthPostgresTests",
            dependencies: [
                "HearthPostgres", "HearthStoreConformance", "HearthCore", "HearthDocuments", "HearthDatabase", "HearthStorage", "HearthAppCheck",
                "HearthAuth",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthFirestoreProtoTests",
            dependencies: [
                "HearthFirestoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCInProcessTransport", package: "grpc-swift-2"),
            ],
            resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthClientTests",
            dependencies: ["HearthClient", "HearthServer", "HearthApp", "HearthCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthAppTests",
            dependencies: [
                "HearthApp", "HearthServer", "HearthCore", "HearthAuth", "HearthDocuments", "HearthSQLite", "HearthStorage", "HearthPostgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthServerTests",
            dependencies: [
                "HearthServer", "HearthCore", "HearthAuth", "HearthJWT", "HearthDatabase", "HearthDocuments", "HearthSQLite", "HearthStorage", "HearthStoreConformance",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                "HearthFirestoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

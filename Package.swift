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
        .library(name: "HearthDocuments", targets: ["HearthDocuments"]),
        .library(name: "HearthSQLite", targets: ["HearthSQLite"]),
        .library(name: "HearthServer", targets: ["HearthServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // Values, paths, ordering, limits, errors, JSON — no I/O.
        .target(name: "HearthCore", swiftSettings: swiftSettings),
        // The security-rules language: lexer, parser, evaluator — no I/O.
        .target(name: "HearthRules", dependencies: ["HearthCore"], swiftSettings: swiftSettings),
        // Accounts, password hashing, tokens — no HTTP.
        .target(
            name: "HearthAuth",
            dependencies: [
                "HearthCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // The document engine: writes, transforms, queries, transactions, indexes.
        .target(
            name: "HearthDocuments",
            dependencies: ["HearthCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // Embedded persistence behind the engine's protocols.
        .target(
            name: "HearthSQLite",
            dependencies: ["HearthCore", "HearthDocuments", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        // Transports only: Firestore v1 REST and Firebase Auth REST over Hummingbird.
        .target(
            name: "HearthServer",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthSQLite", "HearthAuth",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "hearth",
            dependencies: [
                "HearthCore", "HearthDocuments", "HearthSQLite", "HearthServer", "HearthAuth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "HearthCoreTests", dependencies: ["HearthCore"], swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthAuthTests",
            dependencies: [
                "HearthAuth", "HearthCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthRulesTests", dependencies: ["HearthRules", "HearthCore"],
            resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(
            name: "HearthDocumentsTests",
            dependencies: ["HearthCore", "HearthDocuments", "HearthSQLite"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HearthServerTests",
            dependencies: [
                "HearthServer", "HearthCore", "HearthAuth",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

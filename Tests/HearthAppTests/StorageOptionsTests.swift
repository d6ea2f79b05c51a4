import Foundation
import HearthCore
import HearthPostgres
import HearthServer
import HearthStorage
import Logging
import Testing

@testable import HearthApp

/// `--database-url` and `--blob-store`: what the composition root reads from them, how they are
/// shown, and the data directory's record of a PostgreSQL server.
@Suite struct StorageOptionsTests {
    // MARK: --database-url

    @Test func aDatabaseURLIsReadAsLibpqWritesIt() throws {
        let settings = try DatabaseURL.settings("postgres://hearth:s3cret@db.internal:6543/hearth_prod?sslmode=require")
        #expect(settings.host == "db.internal")
        #expect(settings.port == 6543)
        #expect(settings.username == "hearth")
        #expect(settings.password == "s3cret")
        #expect(settings.database == "hearth_prod")
        #expect(settings.tls == .require)
        let defaults = try DatabaseURL.settings("postgresql://db")
        #expect(defaults.port == 5432)
        #expect(defaults.username == "postgres")
        #expect(defaults.tls == .prefer)
        // What validate returns (and logs show) names the endpoint, never the password.
        let shown = try DatabaseURL.validate("postgres://hearth:s3cret@db.internal:6543/hearth_prod")
        #expect(shown == "postgres://hearth@db.internal:6543/hearth_prod")
    }

    @Test(arguments: [
        "", "   ", "mysql://db/hearth", "db.internal:5432", "postgres://db/hearth?sslmode=sometimes", "postgres://db/a/b",
    ])
    func aMalformedDatabaseURLIsRefusedWithTheReason(_ text: String) {
        #expect {
            try DatabaseURL.validate(text)
        } throws: { error in
            guard let error = error as? HearthError else { return false }
            return error.code == .invalidArgument && !error.message.isEmpty
        }
    }

    @Test func aDatabaseURLIsShownWithItsPasswordRedacted() {
        #expect(DatabaseURL.redacted("postgres://hearth:s3cret@db:5432/hearth") == "postgres://hearth:REDACTED@db:5432/hearth")
        #expect(DatabaseURL.redacted("postgres://db:5432/hearth?sslmode=disable&password=s3cret") == "postgres://db:5432/hearth?sslmode=disable&password=REDACTED")
        #expect(DatabaseURL.redacted("postgres://hearth@db/hearth") == "postgres://hearth@db/hearth")
        // A percent-encoded password is still a password.
        #expect(!DatabaseURL.redacted("postgres://hearth:p%40ss%3Aword@db/hearth").contains("ss"))
        // Text that is not a URL might be a secret in a shape we do not know: never echoed.
        #expect(DatabaseURL.redacted("hearth:s3cret") == "(set, redacted)")
    }

    @Test func theConfigurationsDatabaseURLSelectsPostgreSQL() {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = "/tmp/hearth-x"
        guard case .sqlite(let directory, nil) = StorageBackend(configuration) else {
            Issue.record("no URL: SQLite")
            return
        }
        #expect(directory.path == "/tmp/hearth-x")
        configuration.databaseURL = "postgres://db/hearth"
        guard case .postgres(let url, let dataDirectory, nil) = StorageBackend(configuration) else {
            Issue.record("a URL: PostgreSQL")
            return
        }
        #expect(url == "postgres://db/hearth")
        #expect(dataDirectory.path == "/tmp/hearth-x")
    }

    // MARK: --blob-store

    @Test func fileOrNothingKeepsBytesInTheDataDirectory() throws {
        #expect(try BlobStoreLocation(nil) == .files)
        #expect(try BlobStoreLocation("file") == .files)
        #expect(BlobStoreLocation.files.configuration(defaultRegion: "us-east-1", accessKeyID: "a", secretAccessKey: "b") == nil)
    }

    @Test func anS3URLNamesBucketEndpointPrefixAndRegion() throws {
        let location = try BlobStoreLocation("s3://hearth-objects?endpoint=http://minio.internal:9000&prefix=prod&region=eu-west-1")
        #expect(location == .s3(endpoint: URL(string: "http://minio.internal:9000")!, bucket: "hearth-objects", prefix: "prod/", region: "eu-west-1"))
        let configuration = try #require(location.configuration(defaultRegion: "us-east-1", accessKeyID: "AKID", secretAccessKey: "SECRET"))
        #expect(configuration.endpoint.absoluteString == "http://minio.internal:9000")
        #expect(configuration.bucket == "hearth-objects")
        #expect(configuration.prefix == "prod/")
        #expect(configuration.region == "eu-west-1")
        #expect(configuration.accessKeyID == "AKID")
        #expect(configuration.secretAccessKey == "SECRET")
        // A prefix in the path says the same; without a region the default applies.
        let path = try BlobStoreLocation("s3://b/some/prefix/?endpoint=https://s3.example.com")
        #expect(path == .s3(endpoint: URL(string: "https://s3.example.com")!, bucket: "b", prefix: "some/prefix/", region: nil))
        #expect(path.configuration(defaultRegion: "ap-south-1", accessKeyID: "a", secretAccessKey: "b")?.region == "ap-south-1")
        // Without an endpoint: AWS's regional endpoint.
        #expect(try BlobStoreLocation("s3://b?region=eu-central-1") == .s3(endpoint: URL(string: "https://s3.eu-central-1.amazonaws.com")!, bucket: "b", prefix: "", region: "eu-central-1"))
        #expect(try BlobStoreLocation("s3://b") == .s3(endpoint: URL(string: "https://s3.us-east-1.amazonaws.com")!, bucket: "b", prefix: "", region: nil))
    }

    @Test func theOlderBlobS3SpellingReadsIntoTheSameConfiguration() throws {
        let older = try BlobStoreLocation("http://127.0.0.1:9000/hearth-objects/prod")
        let newer = try BlobStoreLocation("s3://hearth-objects?endpoint=http://127.0.0.1:9000&prefix=prod/")
        #expect(older == newer)
        #expect(try BlobStoreLocation("https://s3.example.com/bucket") == .s3(endpoint: URL(string: "https://s3.example.com")!, bucket: "bucket", prefix: "", region: nil))
    }

    @Test(arguments: [
        "s3://", "s3://?endpoint=http://h:9000", "s3://b?endpoint=ftp://h", "s3://b?endpoint=http://h:9000/path", "s3://b?endpoint=notaurl",
        "s3://b?colour=blue", "s3://b/p?prefix=q", "gs://bucket", "http:///bucket", "https://host", "files",
    ])
    func aMalformedBlobStoreIsRefusedWithTheReason(_ spec: String) {
        #expect {
            try BlobStoreLocation(spec)
        } throws: { error in
            (error as? HearthError)?.code == .invalidArgument
        }
    }

    // MARK: The data directory's record

    @Test func aPostgreSQLServersDataDirectoryIsNeverOpenedAsSQLite() async throws {
        let directory = CompositionRootTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        #expect(PostgresMarker.refusal(dataDirectory: directory, command: "hearth backup", configured: nil) == nil)
        let configured = try #require(PostgresMarker.refusal(dataDirectory: directory, command: "hearth backup", configured: "env HEARTH_DATABASE_URL"))
        #expect(configured.contains("hearth backup") && configured.contains("env HEARTH_DATABASE_URL"))

        try PostgresMarker.write(directory, url: "postgres://hearth:s3cret@db:5432/hearth")
        // The whole URL (the admin commands connect with it), readable only by the owner, as the admin token.
        let file = directory.appendingPathComponent(PostgresMarker.fileName)
        let permissions = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
        #expect(PostgresMarker.url(directory) == "postgres://hearth:s3cret@db:5432/hearth")
        // Messages show it redacted.
        #expect(PostgresMarker.recorded(directory) == "postgres://hearth:REDACTED@db:5432/hearth")
        let recorded = try #require(PostgresMarker.refusal(dataDirectory: directory, command: "hearth admin s3-keys create", configured: nil))
        #expect(recorded.contains("PostgreSQL") && recorded.contains("db:5432") && !recorded.contains("s3cret"))
        // `hearth serve` without the URL: refused, never an empty SQLite store in its place.
        await #expect {
            _ = try await Stores.open(.sqlite(dataDirectory: directory, blobS3: nil), logger: Logger(label: "test"))
        } throws: { error in
            (error as? HearthError)?.code == .failedPrecondition && "\(error)".contains("--database-url")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("hearth.sqlite").path))
    }

    @Test func anUnreachableDatabaseIsNamedWithItsCause() async throws {
        // A port nothing listens on (bound, then closed).
        let directory = CompositionRootTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        await #expect {
            _ = try await Stores.open(
                .postgres(url: "postgres://hearth:s3cret@127.0.0.1:1/hearth?sslmode=disable", dataDirectory: directory, blobS3: nil),
                logger: Logger(label: "test"))
        } throws: { error in
            guard let error = error as? HearthError else { return false }
            return error.code == .unavailable && error.message.contains("127.0.0.1:1") && !error.message.contains("s3cret")
        }
        #expect(PostgresMarker.recorded(directory) == nil)
    }
}

import Foundation

/// Where the app's backend is and who the app is: what `FirebaseOptions` and
/// `GoogleService-Info.plist` carry, plus the hosts and ports of a Hearth server.
///
/// The defaults match `hearth serve` on this machine (127.0.0.1, plain HTTP, the emulator
/// suite's ports). Set ``host`` (and ``usesTLS``) once for a server that serves every port on
/// one host, or a port per service.
public struct HearthOptions: Sendable, Equatable {
    public var projectID: String
    public var apiKey: String
    public var googleAppID: String
    public var gcmSenderID: String
    public var bundleID: String?
    public var storageBucket: String?
    public var databaseURL: String?

    /// The server's host name or address, for every service.
    public var host: String = "127.0.0.1"
    /// `https`/`wss` when true. Hearth serves TLS on every port when started with `--tls-cert`.
    public var usesTLS: Bool = false
    public var authPort: Int = 9099
    public var firestorePort: Int = 8080
    public var storagePort: Int = 9199
    public var databasePort: Int = 9000
    /// How long one request may take, connecting included (an unreachable server is retried until then).
    public var requestTimeout: Duration = .seconds(30)

    public init(projectID: String, apiKey: String = "hearth-api-key", googleAppID: String = "1:000000000000:ios:0000000000000000", gcmSenderID: String = "000000000000") {
        self.projectID = projectID
        self.apiKey = apiKey
        self.googleAppID = googleAppID
        self.gcmSenderID = gcmSenderID
    }

    /// As `FirebaseOptions(googleAppID:gcmSenderID:)`; set ``projectID`` afterwards.
    public init(googleAppID: String, gcmSenderID: String) {
        self.init(projectID: "", googleAppID: googleAppID, gcmSenderID: gcmSenderID)
    }

    /// Reads a `GoogleService-Info.plist` (`API_KEY`, `GOOGLE_APP_ID`, `GCM_SENDER_ID`, `PROJECT_ID`,
    /// `STORAGE_BUCKET`, `DATABASE_URL`, `BUNDLE_ID`); nil when the file is missing or lacks
    /// `GOOGLE_APP_ID` or `PROJECT_ID`.
    public init?(contentsOfFile path: String) {
        guard let data = FileManager.default.contents(atPath: path),
              let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
              let appID = plist["GOOGLE_APP_ID"] as? String, let project = plist["PROJECT_ID"] as? String
        else { return nil }
        self.init(projectID: project, apiKey: plist["API_KEY"] as? String ?? "", googleAppID: appID,
                  gcmSenderID: plist["GCM_SENDER_ID"] as? String ?? "")
        bundleID = plist["BUNDLE_ID"] as? String
        storageBucket = plist["STORAGE_BUCKET"] as? String
        databaseURL = plist["DATABASE_URL"] as? String
    }

    /// `http://host:port` (or `https://`) of one service.
    public func baseURL(port: Int) -> String {
        "\(usesTLS ? "https" : "http")://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host):\(port)"
    }
}

import Foundation
import Synchronization

/// `FirebaseApp` for Hearth: one configured app per name, from which every service is reached.
///
/// ```swift
/// HearthApp.configure(options: HearthOptions(projectID: "demo-hearth"))
/// let auth = Auth.auth()
/// ```
public final class HearthApp: Sendable {
    public static let defaultName = "__FIRAPP_DEFAULT"

    public let name: String
    public let options: HearthOptions
    /// Components created for this app (one `Auth`, one `Firestore`, …), by type.
    let components = Mutex<[ObjectIdentifier: any Sendable]>([:])

    init(name: String, options: HearthOptions) {
        self.name = name
        self.options = options
    }

    private static let apps = Mutex<[String: HearthApp]>([:])

    /// Configures the default app. Like Firebase, configuring a name twice is a programming error.
    public static func configure(options: HearthOptions) {
        configure(name: defaultName, options: options)
    }

    public static func configure(name: String, options: HearthOptions) {
        apps.withLock { apps in
            precondition(apps[name] == nil, "The app named \(name) is already configured.")
            apps[name] = HearthApp(name: name, options: options)
        }
    }

    /// The default app, or nil before `configure`.
    public static func app() -> HearthApp? { app(name: defaultName) }

    public static func app(name: String) -> HearthApp? { apps.withLock { $0[name] } }

    /// Every configured app by name.
    public static var allApps: [String: HearthApp] { apps.withLock { $0 } }

    /// Removes the app (its services stop being reachable through it).
    public func delete() async -> Bool {
        Self.apps.withLock { $0.removeValue(forKey: name) } != nil
    }

    /// The component of type `T` for this app, made once by `make`.
    package func component<T: Sendable & AnyObject>(_ type: T.Type, make: () -> T) -> T {
        components.withLock { components in
            if let existing = components[ObjectIdentifier(type)] as? T { return existing }
            let made = make()
            components[ObjectIdentifier(type)] = made
            return made
        }
    }

    /// The default app, or a precondition failure that says what to do.
    package static func requireDefault(for service: String) -> HearthApp {
        guard let app = app() else {
            preconditionFailure("\(service): call HearthApp.configure(options:) before using the service.")
        }
        return app
    }
}

/// The Firebase spellings, so apps' code keeps compiling.
public typealias FirebaseApp = HearthApp
public typealias FirebaseOptions = HearthOptions

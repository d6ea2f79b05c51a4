import Foundation
import HearthClient

// MakeItSo on Linux: sign in anonymously, add, complete and delete tasks, and print what the
// snapshot listener sees. Usage: makeitso-cli [--host H] [--auth-port P] [--firestore-port P] [--project ID]
// [--offline-queue N | --offline-drain 1] (the offline modes of OfflineQueue.swift).

var arguments = CommandLine.arguments.dropFirst()
var options = HearthOptions(projectID: "demo-hearth")
var offlineMode: OfflineMode?
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fatalError("\(flag) needs a value") }
    switch flag {
    case "--host": options.host = value
    case "--auth-port": options.authPort = Int(value)!
    case "--firestore-port": options.firestorePort = Int(value)!
    case "--project": options.projectID = value
    case "--offline-queue": offlineMode = .queue(Int(value)!)
    case "--offline-drain": offlineMode = .drain
    default: fatalError("unknown flag \(flag)")
    }
}
HearthApp.configure(options: options)
if let offlineMode { await runOffline(offlineMode) }

/// Waits until the listener reports a state that `done` accepts (at most 20 s).
func waitFor(_ repository: TaskRepository, _ what: String, _ done: @escaping @Sendable ([TaskItem]) -> Bool) async throws {
    if done(repository.tasks.withLock { $0 }) { return }
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            for await items in repository.updates where done(items) { return }
        }
        group.addTask {
            try await Task.sleep(for: .seconds(20))
            throw NSError(domain: "makeitso", code: 1, userInfo: [NSLocalizedDescriptionKey: "timed out waiting for \(what)"])
        }
        try await group.next()
        group.cancelAll()
    }
}

do {
    let authentication = AuthenticationService()
    let uid = try await authentication.signIn()
    let repository = TaskRepository()
    repository.subscribe(userId: uid)

    for (title, priority) in [("Buy milk", TaskItem.Priority.low), ("Write the report", .high), ("Call Ada", .medium)] {
        try await repository.add(TaskItem(title: title, priority: priority, userId: uid))
    }
    try await waitFor(repository, "three tasks") { $0.count == 3 }

    var report = try require(repository.tasks.withLock { $0 }.first { $0.title == "Write the report" })
    report.completed = true
    try await repository.update(report)
    try await waitFor(repository, "the report completed") { $0.contains { $0.title == "Write the report" && $0.completed } }

    let milk = try require(repository.tasks.withLock { $0 }.first { $0.title == "Buy milk" })
    try await repository.remove(milk)
    try await waitFor(repository, "milk removed") { $0.count == 2 }

    let final = repository.tasks.withLock { $0 }
    print("final: \(final.map { "\($0.title) [\($0.priority.rawValue)]\($0.completed ? " done" : "")" }.joined(separator: "; "))")
    print("created times set by the server: \(final.allSatisfy { $0.createdTime != nil })")
    repository.unsubscribe()
    exit(0)
} catch {
    print("makeitso-cli failed: \(error)")
    exit(1)
}

func `require`<T>(_ value: T?) throws -> T {
    guard let value else { throw NSError(domain: "makeitso", code: 2, userInfo: [NSLocalizedDescriptionKey: "a task is missing"]) }
    return value
}

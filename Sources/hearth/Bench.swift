import ArgumentParser

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Measure Hearth's throughput and latency next to same-run baselines.")
    func run() async throws {
        print("bench: see below")
    }
}

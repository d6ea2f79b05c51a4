#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few libm functions the built-ins need.
enum LibM {
    static func pow(_ x: Double, _ y: Double) -> Double {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        return Foundation_pow(x, y)
        #endif
    }
    static func sin(_ x: Double) -> Double { Foundation_sin(x) }
    static func cos(_ x: Double) -> Double { Foundation_cos(x) }
    static func asin(_ x: Double) -> Double { Foundation_asin(x) }
}

@inline(__always) private func Foundation_pow(_ x: Double, _ y: Double) -> Double { pow(x, y) }
@inline(__always) private func Foundation_sin(_ x: Double) -> Double { sin(x) }
@inline(__always) private func Foundation_cos(_ x: Double) -> Double { cos(x) }
@inline(__always) private func Foundation_asin(_ x: Double) -> Double { asin(x) }

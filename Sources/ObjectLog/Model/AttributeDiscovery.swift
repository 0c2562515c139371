import ObjectLogStore
@_spi(Reflection) import Swift
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How many threads are building a model's prototypes right now (see ``AttributeDiscovery``).
///
/// ``Attribute``'s initializers, inlined in client code, load it with relaxed ordering and
/// take their slow path only when it is not zero. An atomic rather than a `Mutex`: the
/// thread that increments it is the only one whose initializers must see the change, and
/// the load stays a plain load on the fast path.
@usableFromInline
let attributeDiscoveryCount = Atomic<Int>(0)

/// Records the options of the attributes a model's prototype initialises.
///
/// An ``Attribute`` stores only its value, so the options given to its initializer are
/// learnt while the model is built: ``makePrototype(of:)`` creates an instance of the entity
/// class with recording switched on for the current thread only, and every attribute
/// initialised on that thread appends its options, in initialisation order. Objects other
/// threads create meanwhile take the initializers' slow path but record nothing.
///
/// Swift initialises the most-derived class's stored properties first, then those of each
/// superclass up to ``ManagedObject``; ``fieldOptions(of:recorded:)`` puts the recorded
/// options in the order of the runtime's field walk, which is base class first.
@usableFromInline
enum AttributeDiscovery {
    /// The options recorded so far, by recording thread; a stack per thread, for a prototype
    /// whose initialisation builds another model.
    private static let recordings = LockedValue<[UInt: [[DeclaredAttribute]]]>([:])

    /// Whether some thread is discovering a model (a relaxed load: only the discovering
    /// thread's own initializers must see its change, and they run after it on that thread).
    @inlinable
    static var isActive: Bool { attributeDiscoveryCount.load(ordering: .relaxed) != 0 }

    /// The current thread's identity.
    private static var currentThread: UInt { UInt(pthread_self()) }

    /// Appends `options` to the current thread's recording, if it has one.
    ///
    /// Called by ``Attribute``'s initializers while some thread is discovering a model.
    @usableFromInline
    @inline(never)
    static func record(_ options: AttributeOptions) {
        record(DeclaredAttribute(options: options, originalName: nil))
    }

    /// Appends `options` and the attribute's name in an earlier model version.
    @usableFromInline
    @inline(never)
    static func record(_ options: AttributeOptions, originalName: String) {
        record(DeclaredAttribute(options: options, originalName: originalName))
    }

    /// Appends `options`, the attribute's earlier name if any, and its validation rule.
    @usableFromInline
    @inline(never)
    static func record<Value>(
        _ options: AttributeOptions,
        originalName: String?,
        rule: ValidationRule<Value>
    ) {
        record(DeclaredAttribute(options: options, originalName: originalName, checks: rule.checks))
    }

    private static func record(_ declaration: DeclaredAttribute) {
        let thread = currentThread
        recordings.withLock { recordings in
            guard var stack = recordings[thread], !stack.isEmpty else { return }
            recordings[thread] = nil
            stack[stack.count - 1].append(declaration)
            recordings[thread] = stack
        }
    }

    /// Creates an instance of `type`, returning the options of the attributes its
    /// initialisation made, in initialisation order.
    static func makePrototype(
        of type: ManagedObject.Type
    ) -> (prototype: ManagedObject, options: [DeclaredAttribute]) {
        let thread = currentThread
        recordings.withLock { $0[thread, default: []].append([]) }
        attributeDiscoveryCount.add(1, ordering: .relaxed)
        let prototype = type.init()
        attributeDiscoveryCount.subtract(1, ordering: .relaxed)
        let options = recordings.withLock { recordings -> [DeclaredAttribute] in
            var stack = recordings[thread] ?? [[]]
            let top = stack.removeLast()
            recordings[thread] = stack.isEmpty ? nil : stack
            return top
        }
        return (prototype, options)
    }

    /// Puts the recorded options of a class's attributes in the order of the runtime's field
    /// walk (`_forEachField` with the class option: base class first).
    ///
    /// - Parameters:
    ///   - type: The entity class.
    ///   - recorded: What ``makePrototype(of:)`` recorded for it: the attributes the class
    ///     itself declares first, then those of its superclass, and so on.
    /// - Returns: One options value per attribute field, in walk order; nil if the prototype
    ///   did not initialise exactly one attribute per attribute field.
    static func fieldOptions(
        of type: ManagedObject.Type,
        recorded: [DeclaredAttribute]
    ) -> [DeclaredAttribute]? {
        // The number of attribute fields of each class level, most derived first.
        var levels: [Int] = []
        var level: AnyClass? = type
        while let current = level {
            let all = attributeFieldCount(of: current)
            let inherited = _getSuperclass(current).map(attributeFieldCount(of:)) ?? 0
            levels.append(all - inherited)
            level = _getSuperclass(current)
        }
        guard levels.reduce(0, +) == recorded.count else { return nil }
        var chunks: [ArraySlice<DeclaredAttribute>] = []
        var start = 0
        for count in levels {
            chunks.append(recorded[start..<(start + count)])
            start += count
        }
        return Array(chunks.reversed().joined())
    }

    /// The number of attribute fields of a class, inherited ones included.
    private static func attributeFieldCount(of type: AnyClass) -> Int {
        var count = 0
        _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1)) { _, _, fieldType, _ in
            if let wrapper = fieldType as? any PropertyWrapperDescribing.Type, wrapper.isAttribute {
                count += 1
            }
            return true
        }
        return count
    }
}

/// What an ``Attribute``'s initializer declares besides its value.
struct DeclaredAttribute: Sendable {
    var options: AttributeOptions
    /// The attribute's name in an earlier model version, if it was renamed.
    var originalName: String?
    /// The checks of its ``ValidationRule``, if it has one.
    var checks: [AttributeCheck] = []
}

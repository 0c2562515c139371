import Foundation

extension ManagedObjectContext {
    /// Runs the attributes' ``ValidationRule``s and the objects' `validateFor…` methods on the
    /// objects a save is about to write, appending every failure to `errors`.
    ///
    /// The rules run whether or not an override of `validateForInsert()` calls `super`, so
    /// that each failure is reported once, with the attribute and rule it concerns.
    func validateObjects(
        inserted: [ManagedObject],
        updated: [ManagedObject],
        deleted: [ManagedObject],
        into errors: inout [ObjectLogError]
    ) {
        // Only entities that declare rules have attributes to read.
        let checksAttributes = model.entities.contains { !$0.attributeChecks.isEmpty }
        func check(_ object: ManagedObject, hook: String, _ validate: () throws -> Void) {
            if checksAttributes, let entity = object.entity, !entity.attributeChecks.isEmpty {
                Self.checkAttributes(of: object, entity: entity, into: &errors)
            }
            do {
                try validate()
            } catch {
                errors.append(Self.hookFailure(error, object: object, hook: hook))
            }
        }
        inserted.forEachUnretained { object in
            check(object, hook: "validateForInsert()") { try object.validateForInsert() }
        }
        updated.forEachUnretained { object in
            check(object, hook: "validateForUpdate()") { try object.validateForUpdate() }
        }
        for object in deleted {
            do {
                try object.validateForDelete()
            } catch {
                errors.append(Self.hookFailure(error, object: object, hook: "validateForDelete()"))
            }
        }
    }

    /// Appends a failure for each check of `entity`'s attributes that `object`'s value fails.
    private static func checkAttributes(
        of object: ManagedObject,
        entity: EntityDescription,
        into errors: inout [ObjectLogError]
    ) {
        for (accessor, checks) in entity.attributeChecks {
            // External data not loaded yet is unchanged since it was saved, and reading it
            // here would load every blob of the save.
            if object.accessState.contains(.pendingExternal),
                object.pendingExternal.contains(accessor.index)
            {
                continue
            }
            let value = accessor.value(of: object)
            for check in checks where !check.passes(value) {
                errors.append(
                    ObjectLogError(
                        .validation,
                        "\(object.objectID).\(accessor.name) is \(describe(value)), which does "
                            + "not satisfy \(check.name)",
                        objectID: object.objectID,
                        property: accessor.name
                    )
                )
            }
        }
    }

    /// The failure of a `validateFor…` method: an ``ObjectLogError`` as thrown (naming the
    /// object if it did not), anything else as a validation error that keeps it.
    private static func hookFailure(
        _ error: any Error,
        object: ManagedObject,
        hook: String
    ) -> ObjectLogError {
        if var error = error as? ObjectLogError {
            if error.objectID == nil { error.objectID = object.objectID }
            return error
        }
        return ObjectLogError(
            .validation,
            "\(object.objectID) failed \(hook): \(error)",
            objectID: object.objectID,
            underlyingError: error
        )
    }

    /// A value as an error message shows it: strings quoted and cut at 60 characters, data
    /// by its size, optionals unwrapped.
    static func describe(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return "nil" }
            return describe(wrapped)
        }
        if let text = value as? String {
            let shown = text.count > 60 ? text.prefix(57) + "…" : Substring(text)
            return "\"\(shown)\""
        }
        if let data = value as? Data { return "\(data.count) bytes" }
        return String(describing: value)
    }
}

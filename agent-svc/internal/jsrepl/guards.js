// Guards for the builtins that can allocate a large block in one native
// call, where no interrupt can stop them: each estimates the bytes its
// original would allocate and asks reserve(bytes) first, which ends the
// eval when the session's memory budget cannot hold them (see memory.go).
// Evaluated once per runtime; the originals and the intrinsics used here
// are captured in this closure, so later changes to globals by REPL code
// neither reach the originals nor disarm a guard.
(function (reserve, left, count, regex) {
	'use strict';
	const apply = Reflect.apply, construct = Reflect.construct, defineProperty = Object.defineProperty;
	const isArray = Array.isArray, isView = ArrayBuffer.isView, trunc = Math.trunc, min = Math.min, max = Math.max;
	const iterator = Symbol.iterator, hasInstance = Symbol.hasInstance, isPrototypeOf = Object.prototype.isPrototypeOf, ProxyCtor = Proxy, StringCtor = String, NumberCtor = Number;
	const strIncludes = String.prototype.includes, arrIncludes = Array.prototype.includes, arrPush = Array.prototype.push;
	const OrigArrayBuffer = ArrayBuffer, origStringify = JSON.stringify, isConcatSpreadable = Symbol.isConcatSpreadable;
	// Bytes per element of a JS array slot, per UTF-16 code unit, and per
	// property of an object (its map entry and key).
	const SLOT = 16, UNIT = 2, PROP = 64;

	const int = v => { const n = trunc(NumberCtor(v)); return n === n ? n : 0; };
	const len = v => max(0, min(int(v), 2 ** 53 - 1));
	const replace = (obj, name, guard) => {
		const orig = obj[name];
		// The guard gets the first arguments and the whole list: destructuring
		// would run the array iterator, which REPL code can replace.
		const f = { [name](...args) { guard(this, args[0], args[1], args[2], args); return apply(orig, this, args); } }[name];
		defineProperty(f, 'length', { value: orig.length });
		defineProperty(obj, name, { value: f, writable: true, configurable: true, enumerable: false });
	};

	// A slice [start, end) of n elements, resolved as the builtins do.
	const span = (n, start, end) => {
		const from = start === undefined ? 0 : int(start), to = end === undefined ? n : int(end);
		const k = from < 0 ? max(n + from, 0) : min(from, n), final = to < 0 ? max(n + to, 0) : min(to, n);
		return max(0, final - k);
	};
	// The elements a value adds to a concat.
	const spreadLen = v => v !== null && typeof v === 'object' && (v[isConcatSpreadable] !== undefined ? v[isConcatSpreadable] : isArray(v)) ? len(v.length) : 1;
	// A string's bytes, and an estimate for what another value becomes.
	const strBytes = v => (typeof v === 'string' ? v.length : 24) * UNIT;

	// Regular expressions: exec (every other RegExp and String method
	// matches through it) and test get the eval's time left as their match
	// timeout (regex.go).
	replace(RegExp.prototype, 'exec', re => regex(re));
	replace(RegExp.prototype, 'test', re => regex(re));

	// Array copies made in one native call.
	replace(Array.prototype, 'concat', (a, x, y, z, items) => {
		let n = spreadLen(a);
		for (let i = 0; i < items.length; i++) n += spreadLen(items[i]);
		reserve(n * SLOT);
	});
	replace(Array.prototype, 'slice', (a, start, end) => reserve(span(len(a.length), start, end) * SLOT));
	for (const name of ['map', 'toReversed', 'toSorted', 'with']) {
		if (typeof Array.prototype[name] === 'function') replace(Array.prototype, name, a => reserve(len(a.length) * SLOT));
	}
	replace(Array.prototype, 'toSpliced', (a, x, y, z, items) => reserve((len(a.length) + items.length) * SLOT));
	// flat copies nested arrays down to depth; the count stops once it
	// passes the room left, where reserve decides.
	const nested = (a, depth, room) => {
		if (depth <= 0) return len(a.length);
		let n = 0;
		const k = len(a.length);
		for (let i = 0; i < k && n <= room; i++) {
			const e = a[i];
			n += isArray(e) ? nested(e, depth - 1, room - n) : 1;
		}
		return n;
	};
	replace(Array.prototype, 'flat', (a, depth) => {
		const d = min(depth === undefined ? 1 : int(depth), 64);
		// A count cut at the room is over it, unless a collection made
		// more room: then count again, up to the new room.
		for (let room = left() / SLOT; ;) {
			const n = nested(a, d, room);
			reserve(n * SLOT);
			if (n <= room) return;
			room = left() / SLOT;
		}
	});
	// flatMap appends each callback result in one step: it is asked for
	// before the step.
	const origFlatMap = Array.prototype.flatMap;
	defineProperty(Array.prototype, 'flatMap', {
		writable: true, configurable: true, enumerable: false,
		value: { flatMap(fn, self) {
			if (typeof fn !== 'function') return apply(origFlatMap, this, [fn, self]);
			return apply(origFlatMap, this, [function (...args) {
				const r = apply(fn, self, args);
				if (isArray(r)) reserve(len(r.length) * SLOT);
				return r;
			}]);
		} }.flatMap,
	});
	// Spreading ([...a], f(...a)) and for-of walk an iterator in one native
	// loop that no interrupt stops, one value per element: holes of a
	// sparse array and the characters of a string included.
	const guardIter = (proto, per, size) => {
		const orig = proto[iterator];
		const f = { [iterator]() { reserve(size(this) * per); return apply(orig, this, []); } }[iterator];
		defineProperty(proto, iterator, { value: f, writable: true, configurable: true, enumerable: false });
	};
	guardIter(Array.prototype, SLOT, a => len(a.length));
	guardIter(String.prototype, SLOT, s => StringCtor(s).length);
	guardIter(Object.getPrototypeOf(Int8Array.prototype), SLOT, a => len(a.length));
	guardIter(Set.prototype, SLOT, s => len(s.size));
	guardIter(Map.prototype, SLOT * 6, m => len(m.size));
	// apply and construct copy an array-like into arguments.
	const argsGuard = (list) => { if (list !== null && typeof list === 'object') reserve(len(list.length) * SLOT); };
	replace(Function.prototype, 'apply', (f, self, list) => argsGuard(list));
	replace(Reflect, 'apply', (r, target, self, list) => argsGuard(list));
	replace(Reflect, 'construct', (r, target, list) => argsGuard(list));
	// Object.assign copies every property of its sources; arrays and
	// strings are counted, plain objects are already in the budget.
	replace(Object, 'assign', (o, x, y, z, sources) => {
		let n = 0;
		for (let i = 1; i < sources.length; i++) {
			const v = sources[i];
			if (typeof v === 'string' || (v !== null && typeof v === 'object' && (isArray(v) || isView(v)))) n += len(v.length);
		}
		reserve(n * PROP);
	});
	for (const name of ['keys', 'values', 'entries']) {
		replace(Object, name, (o, v) => { if (isArray(v) || isView(v) || typeof v === 'string') reserve(len(v.length) * PROP); });
	}

	// String copies made in one native call.
	replace(String.prototype, 'concat', (s, x, y, z, parts) => {
		let bytes = StringCtor(s).length * UNIT;
		for (let i = 0; i < parts.length; i++) bytes += strBytes(parts[i]);
		reserve(bytes);
	});
	for (const name of ['toUpperCase', 'toLowerCase', 'toLocaleUpperCase', 'toLocaleLowerCase', 'normalize', 'toWellFormed']) {
		// Case mapping may expand a character to three.
		if (typeof String.prototype[name] === 'function') replace(String.prototype, name, s => reserve(StringCtor(s).length * UNIT * 3));
	}

	replace(String.prototype, 'repeat', (s, n) => reserve(StringCtor(s).length * max(0, int(n)) * UNIT));
	const pad = (s, n) => reserve(max(0, int(n) - StringCtor(s).length) * UNIT);
	replace(String.prototype, 'padStart', pad);
	replace(String.prototype, 'padEnd', pad);
	replace(String.prototype, 'split', (s, sep, limit) => {
		if (sep === undefined || (sep !== null && typeof sep === 'object')) return; // a RegExp splits in JS-visible steps
		const str = StringCtor(s);
		let pieces = count(str, StringCtor(sep)) + 1;
		if (limit !== undefined) pieces = min(pieces, limit >>> 0);
		reserve(pieces * SLOT * 2);
	});
	const replaceGuard = all => (s, pat, repl) => {
		if (typeof pat !== 'string' || typeof repl !== 'string') return;
		const str = StringCtor(s);
		const n = all ? count(str, pat) : min(1, count(str, pat));
		// $` and $' may expand to the whole string at each match.
		const per = apply(strIncludes, repl, ['$']) ? repl.length + str.length : repl.length;
		reserve((str.length + n * per) * UNIT);
	};
	replace(String.prototype, 'replace', replaceGuard(false));
	replace(String.prototype, 'replaceAll', replaceGuard(true));

	replace(Array.prototype, 'fill', (a, value, start, end) => {
		if (!isArray(a)) return;
		reserve(span(len(a.length), start, end) * SLOT);
	});
	replace(Array.prototype, 'join', (a, sep) => {
		const n = len(a.length);
		const sepLen = sep === undefined ? 1 : StringCtor(sep).length;
		let bytes = max(0, n - 1) * sepLen * UNIT;
		reserve(bytes);
		let room = left();
		for (let i = 0; i < n; i++) {
			const e = a[i];
			bytes += (typeof e === 'string' ? e.length : 24) * UNIT;
			if (bytes > room) { reserve(bytes); room = left(); }
		}
	});
	replace(Array, 'from', (ctor, items) => {
		if (items === null || items === undefined) return;
		const sized = isArray(items) || isView(items) || typeof items === 'string';
		if (sized || items[iterator] === undefined) reserve(len(items.length) * SLOT);
		else if (typeof items.size === 'number') reserve(len(items.size) * SLOT);
	});

	// Buffers and typed arrays are constructors: a Proxy guards `new` and
	// keeps instanceof, prototypes and statics; each prototype's
	// constructor points at the proxy, so species-created arrays (slice,
	// map, from) pass through it too.
	const guardCtor = (name, bytes) => {
		const orig = globalThis[name];
		if (typeof orig !== 'function') return;
		const p = new ProxyCtor(orig, {
			construct(t, args, nt) { reserve(bytes(args)); return construct(t, args, nt === p ? t : nt); },
			apply(t, self, args) { return apply(t, self, args); },
		});
		// goja's instanceof does not see through a Proxy; answer it on the
		// constructor, for subclasses too.
		defineProperty(orig, hasInstance, {
			value: function (v) { return apply(isPrototypeOf, this.prototype, [v]); }, configurable: true,
		});
		defineProperty(orig.prototype, 'constructor', { value: p, writable: true, configurable: true, enumerable: false });
		defineProperty(globalThis, name, { value: p, writable: true, configurable: true, enumerable: false });
	};
	guardCtor('ArrayBuffer', args => len(args[0]));
	for (const name of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
		'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
		const per = globalThis[name] && globalThis[name].BYTES_PER_ELEMENT;
		guardCtor(name, args => {
			const a = args[0];
			if (a === null || typeof a !== 'object') return len(a) * per;
			if (a instanceof OrigArrayBuffer) return 0; // a view: no copy
			return len(isView(a) || isArray(a) || a[iterator] === undefined ? a.length : a.size) * per;
		});
	}

	// JSON.stringify builds its text in one native call; a replacer runs
	// for every value, so counting there bounds the text as it grows. A
	// property-list replacer is applied here too, in list order, as the
	// specification does.
	defineProperty(JSON, 'stringify', {
		writable: true, configurable: true, enumerable: false,
		value: function stringify(value, replacer, space) {
			const fn = typeof replacer === 'function' ? replacer : undefined;
			let keys;
			if (!fn && isArray(replacer)) {
				keys = [];
				for (let i = 0; i < len(replacer.length); i++) {
					const k = replacer[i];
					if (typeof k === 'string' || typeof k === 'number' || k instanceof StringCtor || k instanceof NumberCtor) {
						const s = StringCtor(k);
						if (!apply(arrIncludes, keys, [s])) apply(arrPush, keys, [s]);
					}
				}
			}
			const gap = typeof space === 'number' || space instanceof NumberCtor ? min(10, max(0, int(space)))
				: typeof space === 'string' || space instanceof StringCtor ? min(10, StringCtor(space).length) : 0;
			let bytes = 0, room = left();
			return apply(origStringify, JSON, [value, function (k, v) {
				if (fn) v = apply(fn, this, [k, v]);
				if (keys && v !== null && typeof v === 'object' && !isArray(v)) {
					const o = {};
					for (let i = 0; i < keys.length; i++) o[keys[i]] = v[keys[i]];
					v = o;
				}
				bytes += (k.length + (typeof v === 'string' ? v.length : 8) + 4 + gap * 4) * UNIT;
				if (bytes > room) { reserve(bytes); room = left(); }
				return v;
			}, space]);
		},
	});
})

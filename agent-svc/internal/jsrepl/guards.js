// Guards for the builtins that can allocate a large block in one native
// call, where no interrupt can stop them: each estimates the bytes its
// original would allocate and asks reserve(bytes) first, which ends the
// eval when the session's memory budget cannot hold them (see memory.go).
// Evaluated once per runtime; the originals and the intrinsics used here
// are captured in this closure, so later changes to globals by REPL code
// neither reach the originals nor disarm a guard.
(function (reserve, left, count) {
	'use strict';
	const apply = Reflect.apply, construct = Reflect.construct, defineProperty = Object.defineProperty;
	const isArray = Array.isArray, isView = ArrayBuffer.isView, trunc = Math.trunc, min = Math.min, max = Math.max;
	const iterator = Symbol.iterator, hasInstance = Symbol.hasInstance, isPrototypeOf = Object.prototype.isPrototypeOf, ProxyCtor = Proxy, StringCtor = String, NumberCtor = Number;
	const OrigArrayBuffer = ArrayBuffer, origStringify = JSON.stringify;
	// Bytes per element of a JS array slot, and per UTF-16 code unit.
	const SLOT = 16, UNIT = 2;

	const int = v => { const n = trunc(NumberCtor(v)); return n === n ? n : 0; };
	const len = v => max(0, min(int(v), 2 ** 53 - 1));
	const replace = (obj, name, guard) => {
		const orig = obj[name];
		const f = { [name](...args) { guard(this, args); return apply(orig, this, args); } }[name];
		defineProperty(f, 'length', { value: orig.length });
		defineProperty(obj, name, { value: f, writable: true, configurable: true, enumerable: false });
	};

	replace(String.prototype, 'repeat', (s, [n]) => reserve(StringCtor(s).length * max(0, int(n)) * UNIT));
	const pad = (s, [n]) => reserve(max(0, int(n) - StringCtor(s).length) * UNIT);
	replace(String.prototype, 'padStart', pad);
	replace(String.prototype, 'padEnd', pad);
	replace(String.prototype, 'split', (s, [sep, limit]) => {
		if (sep === undefined || (sep !== null && typeof sep === 'object')) return; // a RegExp splits in JS-visible steps
		const str = StringCtor(s);
		let pieces = count(str, StringCtor(sep)) + 1;
		if (limit !== undefined) pieces = min(pieces, limit >>> 0);
		reserve(pieces * SLOT * 2);
	});
	const replaceGuard = all => (s, [pat, repl]) => {
		if (typeof pat !== 'string' || typeof repl !== 'string') return;
		const str = StringCtor(s);
		const n = all ? count(str, pat) : min(1, count(str, pat));
		// $` and $' may expand to the whole string at each match.
		const per = repl.includes('$') ? repl.length + str.length : repl.length;
		reserve((str.length + n * per) * UNIT);
	};
	replace(String.prototype, 'replace', replaceGuard(false));
	replace(String.prototype, 'replaceAll', replaceGuard(true));

	replace(Array.prototype, 'fill', (a, [, start, end]) => {
		if (!isArray(a)) return;
		const n = len(a.length);
		const from = start === undefined ? 0 : int(start), to = end === undefined ? n : int(end);
		const k = from < 0 ? max(n + from, 0) : min(from, n), final = to < 0 ? max(n + to, 0) : min(to, n);
		reserve(max(0, final - k) * SLOT);
	});
	replace(Array.prototype, 'join', (a, [sep]) => {
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
	replace(Array, 'from', (ctor, [items]) => {
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
	guardCtor('ArrayBuffer', ([n]) => len(n));
	for (const name of ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
		'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
		const per = globalThis[name] && globalThis[name].BYTES_PER_ELEMENT;
		guardCtor(name, ([a]) => {
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
				for (const k of replacer) {
					if (typeof k === 'string' || typeof k === 'number' || k instanceof StringCtor || k instanceof NumberCtor) {
						const s = StringCtor(k);
						if (!keys.includes(s)) keys.push(s);
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
					for (const key of keys) o[key] = v[key];
					v = o;
				}
				bytes += (k.length + (typeof v === 'string' ? v.length : 8) + 4 + gap * 4) * UNIT;
				if (bytes > room) { reserve(bytes); room = left(); }
				return v;
			}, space]);
		},
	});
})

// Proving that a decoder never holds a whole image as one string: while `run` runs, every
// string Buffer#toString makes and every JSON.parse input is measured, then both are put back.
export interface StringSizes<T> {
  result: T;
  /** The longest string Buffer#toString returned. */
  longestString: number;
  /** The longest text JSON.parse was given. */
  longestParse: number;
  /** How many strings Buffer#toString made. */
  strings: number;
}

export function measureStrings<T>(run: () => T): StringSizes<T> {
  const toString = Buffer.prototype.toString;
  const parse = JSON.parse;
  let longestString = 0;
  let longestParse = 0;
  let strings = 0;
  Buffer.prototype.toString = function (this: Buffer, ...args: unknown[]): string {
    const out = toString.apply(this, args as Parameters<typeof toString>);
    longestString = Math.max(longestString, out.length);
    strings++;
    return out;
  } as typeof toString;
  JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => {
    longestParse = Math.max(longestParse, text.length);
    return parse(text, reviver);
  }) as typeof parse;
  try {
    return { result: run(), longestString, longestParse, strings };
  } finally {
    Buffer.prototype.toString = toString;
    JSON.parse = parse;
  }
}

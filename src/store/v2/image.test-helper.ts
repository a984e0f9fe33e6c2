// Test helper: a v2 store image with every directory's children sorted by name, so two
// images compare by content whatever the order of their children (image-writer.ts lists
// children deleted during the walk last).

export function canonicalImage(image: string): string {
  const sortNode = (n: unknown[]): unknown[] => {
    const body = n[4];
    if (!Array.isArray(body)) return n;
    const kids = (body as unknown[][]).map(sortNode).sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : String(a[0]) > String(b[0]) ? 1 : 0));
    return [...n.slice(0, 4), kids];
  };
  const img = JSON.parse(image) as { root: unknown[] };
  return JSON.stringify({ ...img, root: sortNode(img.root) });
}

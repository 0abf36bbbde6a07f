// Showing and saving a chart the backend drew (`kvgate-app` charts): the SVG text as an image
// source, as the file it is, or as a PNG the window renders from it. Nothing here draws.

/** The SVG as an image source: shown through `<img>`, never inlined, so it runs nothing. */
export function svgDataUrl(svg: string): string {
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
}

/** A file name for an exported chart: `study-name_chart.ext`, safe on every file system. */
export function exportFileName(study: string, chart: string, ext: 'svg' | 'png'): string {
  const safe = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'study';
  return `${safe(study)}_${safe(chart)}.${ext}`;
}

/** Saves a blob through an `<a download>` with an object URL (revoked after the click). */
export function downloadBlob(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

/** Renders SVG text into a PNG at `scale` times its size (the image is drawn into a canvas). */
export function svgToPng(svgText: string, size: { width: number; height: number }, scale = 2): Promise<Blob> {
  return new Promise((resolve, reject) => {
    const image = new Image();
    image.onload = () => {
      const canvas = document.createElement('canvas');
      canvas.width = Math.round(size.width * scale);
      canvas.height = Math.round(size.height * scale);
      const context = canvas.getContext('2d');
      if (!context) {
        reject(new Error('no 2D canvas in this window'));
        return;
      }
      context.fillStyle = '#ffffff';
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.drawImage(image, 0, 0, canvas.width, canvas.height);
      canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error('the canvas gave no PNG'))), 'image/png');
    };
    image.onerror = () => reject(new Error('the chart could not be drawn as an image'));
    image.src = svgDataUrl(svgText);
  });
}

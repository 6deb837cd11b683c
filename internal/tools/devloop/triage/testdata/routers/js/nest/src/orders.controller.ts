import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';

interface NewOrder { items: { sku: string; quantity: number }[] }

@Controller('orders')
export class OrdersController {
  @Get()
  list(): unknown[] {
    return [];
  }

  @Post()
  @HttpCode(201)
  create(@Body() body: NewOrder): { id: string } {
    return { id: String(body.items.length) };
  }

  @Get(':id')
  show(@Param('id') id: string): { id: string } {
    return { id };
  }

  @Put(':id/status')
  setStatus(@Param('id') id: string): { id: string } {
    return { id };
  }

  @Get(':id/attachments')
  attachments(): unknown[] {
    return [];
  }
}
